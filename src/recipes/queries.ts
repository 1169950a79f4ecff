import { providerTargetNames } from '../webhooks/provider-target.ts'
import type { Selectable } from 'kysely'
import { z } from 'zod'
import { toCallRecord, type CallRecord, type CallStatus } from '../calls/record.ts'
import { CALL_STATUSES } from '../calls/list-calls.ts'
import type { WebhookEventsTable } from '../db/schema.ts'
import { keyedLookup } from '../webhooks/keyed-lookup.ts'
import type { Runtime } from '../runtime.ts'
import { NON_TERMINAL_STATUSES, TERMINAL_STATUSES, WEBHOOK_EVENT_TYPES, type WebhookEvent, type WebhookEventType } from '../upstream/schemas.ts'
import { checkArgument, type ArgumentSite } from '../utils/argument-error.ts'
import { MAX_DATE_MS } from '../utils/time-range.ts'
import { toStoredConversation, type StoredConversation } from '../webhooks/read-model.ts'
import { endedAt } from '../reports/day-of-conversation.ts'
import { contactIn, contactNumbers } from '../campaigns/contact-lookup.ts'

export type { StoredConversation }

/** A stored webhook event with its body parsed. */
export interface StoredEvent extends Omit<Selectable<WebhookEventsTable>, 'body' | 'headers'> {
  event: WebhookEvent
}

/** A call switchboard placed or scheduled (the ledger's record). */
export type StoredCall = CallRecord

/** A conversation status: the provider's outcomes and the live statuses before one. */
export type ConversationStatus = (typeof TERMINAL_STATUSES)[number] | (typeof NON_TERMINAL_STATUSES)[number]

/** An instant: epoch milliseconds or a Date. */
export type Instant = number | Date

export interface ConversationQuery {
  /** One status or several, e.g. `'no_answer'` or `['no_answer', 'busy']`. */
  status?: ConversationStatus | ConversationStatus[]
  agentId?: number
  /** The number called, as stored (E.164 when switchboard placed the call). */
  contactNumber?: string
  /** Only conversations whose end (ended_at, else last update) is at or after this instant. */
  endedSince?: Instant
  /** Only conversations whose end is before this instant. */
  endedBefore?: Instant
  /** 1–10000; default 1000, newest first. */
  limit?: number
}

export interface EventQuery {
  /** One event type or several, e.g. `'call.no_answer'`. */
  type?: WebhookEventType | WebhookEventType[]
  /** Processing status: `pending`, `processed`, `failed` or `dead`. */
  status?: 'pending' | 'processed' | 'failed' | 'dead'
  conversationId?: string
  /** Received at or after this instant. */
  since?: Instant
  /** 1–10000; default 1000, newest first. */
  limit?: number
}

export interface CallQuery {
  /** The recipe that placed the calls (its file name). */
  recipe?: string
  campaign?: string
  status?: CallStatus | CallStatus[]
  /** E.164, e.g. `+919876543210`. */
  customerPhone?: string
  /** Created at or after this instant. */
  since?: Instant
  /** 1–10000; default 1000, newest first. */
  limit?: number
}

/** `ctx.data`: read-only helpers over what switchboard has stored. */
export interface RecipeQueries {
  /** Conversations from the read model (kept up to date by webhooks and reconciliation), newest first. */
  conversations(query?: ConversationQuery): Promise<StoredConversation[]>
  /** One conversation by id, or undefined. */
  conversation(conversationId: string): Promise<StoredConversation | undefined>
  /** Stored webhook events (bodies parsed), newest first. */
  events(query?: EventQuery): Promise<StoredEvent[]>
  /** Calls switchboard placed or scheduled (the calls ledger), newest first. */
  calls(query?: CallQuery): Promise<StoredCall[]>
}

// Epoch milliseconds within Date's range: 1e20 reached Postgres, which answered with its own error ("out of range for
// type bigint") instead of the helper's message.
const INSTANT = 'must be an instant: epoch milliseconds (within ±8.64e15, Date\'s range) or a Date'
const instant = z.union([z.number().finite().min(-MAX_DATE_MS, { error: INSTANT }).max(MAX_DATE_MS, { error: INSTANT }), z.date()], { error: INSTANT })
const limit = z.number().int().min(1).max(10_000, { error: 'must be at most 10000' }).optional()
const oneOrMany = <T extends z.ZodType>(item: T, error?: string) => z.union([item, z.array(item).min(1)], error ? { error } : undefined)
// Provider-specific statuses exist beyond the documented ones, so any status word is accepted at run time.
const statusWord = z.string().regex(/^[a-z_]+$/, { error: 'must be a status such as "no_answer"' })

const conversationQuerySchema = z.strictObject({
  status: oneOrMany(statusWord).optional(),
  agentId: z.number().int().optional(),
  contactNumber: z.string().optional(),
  endedSince: instant.optional(),
  endedBefore: instant.optional(),
  limit,
})
const eventQuerySchema = z.strictObject({
  type: oneOrMany(z.enum(WEBHOOK_EVENT_TYPES)).optional(),
  status: z.enum(['pending', 'processed', 'failed', 'dead']).optional(),
  conversationId: z.string().optional(),
  since: instant.optional(),
  limit,
})
const callQuerySchema = z.strictObject({
  recipe: z.string().optional(),
  campaign: z.string().optional(),
  // Every status the ledger has: `queued` (waiting in the paced call queue) was refused, though CallQuery allows it.
  // A union's own error is "Invalid input": the statuses are named instead (the type checker names them; a run did not).
  status: oneOrMany(z.enum(CALL_STATUSES as [CallStatus, ...CallStatus[]]), `must be a call status (${CALL_STATUSES.join(', ')}) or a list of them`).optional(),
  customerPhone: z.string().optional(),
  since: instant.optional(),
  limit,
})

const site = (fn: string, arg: string, expected: string, hint?: ArgumentSite['hint']): ArgumentSite => ({ fn: `ctx.data.${fn}`, arg, expected, hint })
const SITES = {
  conversations: site('conversations', 'query', '{ status?, agentId?, contactNumber?, endedSince?, endedBefore?, limit? }', (v) =>
    typeof v === 'string' ? 'To read one conversation by id use ctx.data.conversation(id)' : undefined),
  conversation: site('conversation', 'conversationId', 'a conversation id (a string)', (v) =>
    typeof v === 'object' && v !== null ? 'To filter conversations use ctx.data.conversations({ status, … })' : undefined),
  events: site('events', 'query', '{ type?, status?, conversationId?, since?, limit? }'),
  calls: site('calls', 'query', '{ recipe?, campaign?, status?, customerPhone?, since?, limit? }'),
}

const ms = (t: number | Date) => (typeof t === 'number' ? t : t.getTime())
const list = (v: string | string[]) => (Array.isArray(v) ? v : [v])

export function createQueries(rt: Runtime): RecipeQueries {
  const db = rt.store.db
  return {
    async conversations(input) {
      const q = checkArgument(conversationQuerySchema.optional(), input, SITES.conversations) ?? {}
      let query = db.selectFrom('conversations').selectAll()
      if (q.status !== undefined) query = query.where('status', 'in', list(q.status))
      if (q.agentId !== undefined) query = query.where('agent_id', '=', q.agentId)
      // The contact whatever way its number was written, as the follow-up planner reads a contact's history.
      if (q.contactNumber !== undefined) query = query.where(contactIn(rt.store.dialect, 'conversations', contactNumbers([{ number: q.contactNumber }], rt.config.defaultCountry)))
      // When a call ended as the daily report files it (src/reports/day-of-conversation.ts): a finished call the provider
      // sent without `ended_at` by its start plus its duration (else its event's time), one still under way by when it
      // was first recorded. It was `updated_at` — moved by any later write (a recording's arrival, a reconciliation), so
      // a call that ended days ago came back as "ended since yesterday" and a daily recipe acted on it again.
      if (q.endedSince !== undefined) query = query.where(endedAt('', '>=', ms(q.endedSince)))
      if (q.endedBefore !== undefined) query = query.where(endedAt('', '<', ms(q.endedBefore)))
      const rows = await query.orderBy('updated_at', 'desc').orderBy('conversation_id').limit(q.limit ?? 1000).execute()
      return rows.map(toStoredConversation)
    },
    async conversation(input) {
      const conversationId = checkArgument(z.string().min(1), input, SITES.conversation)
      const row = await db.selectFrom('conversations').selectAll().where('conversation_id', '=', conversationId).executeTakeFirst()
      return row ? toStoredConversation(row) : undefined
    },
    async events(input) {
      const q = checkArgument(eventQuerySchema.optional(), input, SITES.events) ?? {}
      // The provider's events, as typed: a named target's of another scheme (a CRM's) has its sender's own body, and
      // reaches a recipe through `on: ['crm:…']` instead (read as a provider event it failed at run time).
      let query = db.selectFrom('webhook_events').selectAll().where((eb) => eb.or([eb('target', 'in', providerTargetNames(rt)), eb('source', '=', 'reconcile')]))
      if (q.type !== undefined) query = query.where('event_type', 'in', list(q.type))
      if (q.status !== undefined) query = query.where('status', '=', q.status)
      if (q.conversationId !== undefined) {
        const conversationId = q.conversationId
        query = query.where((eb) => keyedLookup(eb, [eb('conversation_id', '=', conversationId)]))
      }
      if (q.since !== undefined) query = query.where('received_at', '>=', ms(q.since))
      const rows = await query.orderBy('received_at', 'desc').orderBy('event_id').limit(q.limit ?? 1000).execute()
      return rows.map(({ body, headers: _headers, ...rest }) => ({ ...rest, event: JSON.parse(body) as WebhookEvent }))
    },
    async calls(input) {
      const q = checkArgument(callQuerySchema.optional(), input, SITES.calls) ?? {}
      let query = db.selectFrom('calls').selectAll()
      if (q.recipe !== undefined) query = query.where('recipe', '=', q.recipe)
      if (q.campaign !== undefined) query = query.where('campaign', '=', q.campaign)
      if (q.status !== undefined) query = query.where('status', 'in', list(q.status))
      if (q.customerPhone !== undefined) query = query.where(contactIn(rt.store.dialect, 'calls', contactNumbers([{ number: q.customerPhone }], rt.config.defaultCountry)))
      if (q.since !== undefined) query = query.where('created_at', '>=', ms(q.since))
      const rows = await query.orderBy('created_at', 'desc').orderBy('id').limit(q.limit ?? 1000).execute()
      return rows.map(toCallRecord)
    },
  }
}
