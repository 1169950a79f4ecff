import type { Selectable } from 'kysely'
import { toCallRecord, type CallRecord } from '../calls/record.ts'
import type { WebhookEventsTable } from '../db/schema.ts'
import type { Runtime } from '../runtime.ts'
import type { WebhookEvent } from '../upstream/schemas.ts'
import { toStoredConversation, type StoredConversation } from '../webhooks/read-model.ts'

export type { StoredConversation }

/** A stored webhook event with its body parsed. */
export interface StoredEvent extends Omit<Selectable<WebhookEventsTable>, 'body' | 'headers'> {
  event: WebhookEvent
}

/** A call switchboard placed or scheduled (the ledger's record). */
export type StoredCall = CallRecord

export interface ConversationQuery {
  status?: string | string[]
  agentId?: number
  contactNumber?: string
  /** Only conversations whose end (ended_at, else last update) is at or after this instant (epoch ms or Date). */
  endedSince?: number | Date
  endedBefore?: number | Date
  /** Default 1000, newest first. */
  limit?: number
}

export interface EventQuery {
  type?: string | string[]
  status?: string
  conversationId?: string
  since?: number | Date
  limit?: number
}

export interface CallQuery {
  recipe?: string
  campaign?: string
  status?: string | string[]
  customerPhone?: string
  since?: number | Date
  limit?: number
}

/** `ctx.data`: read-only helpers over what switchboard has stored. */
export interface RecipeQueries {
  conversations(query?: ConversationQuery): Promise<StoredConversation[]>
  conversation(conversationId: string): Promise<StoredConversation | undefined>
  events(query?: EventQuery): Promise<StoredEvent[]>
  calls(query?: CallQuery): Promise<StoredCall[]>
}

const ms = (t: number | Date) => (typeof t === 'number' ? t : t.getTime())
const list = (v: string | string[]) => (Array.isArray(v) ? v : [v])

export function createQueries(rt: Runtime): RecipeQueries {
  const db = rt.store.db
  return {
    async conversations(q = {}) {
      let query = db.selectFrom('conversations').selectAll()
      if (q.status !== undefined) query = query.where('status', 'in', list(q.status))
      if (q.agentId !== undefined) query = query.where('agent_id', '=', q.agentId)
      if (q.contactNumber !== undefined) query = query.where('contact_number', '=', q.contactNumber)
      if (q.endedSince !== undefined) {
        const since = ms(q.endedSince)
        query = query.where((eb) => eb.or([eb('ended_at', '>=', since), eb.and([eb('ended_at', 'is', null), eb('updated_at', '>=', since)])]))
      }
      if (q.endedBefore !== undefined) {
        const before = ms(q.endedBefore)
        query = query.where((eb) => eb.or([eb('ended_at', '<', before), eb.and([eb('ended_at', 'is', null), eb('updated_at', '<', before)])]))
      }
      const rows = await query.orderBy('updated_at', 'desc').orderBy('conversation_id').limit(q.limit ?? 1000).execute()
      return rows.map(toStoredConversation)
    },
    async conversation(conversationId) {
      const row = await db.selectFrom('conversations').selectAll().where('conversation_id', '=', conversationId).executeTakeFirst()
      return row ? toStoredConversation(row) : undefined
    },
    async events(q = {}) {
      let query = db.selectFrom('webhook_events').selectAll()
      if (q.type !== undefined) query = query.where('event_type', 'in', list(q.type))
      if (q.status !== undefined) query = query.where('status', '=', q.status)
      if (q.conversationId !== undefined) query = query.where('conversation_id', '=', q.conversationId)
      if (q.since !== undefined) query = query.where('received_at', '>=', ms(q.since))
      const rows = await query.orderBy('received_at', 'desc').orderBy('event_id').limit(q.limit ?? 1000).execute()
      return rows.map(({ body, headers: _headers, ...rest }) => ({ ...rest, event: JSON.parse(body) as WebhookEvent }))
    },
    async calls(q = {}) {
      let query = db.selectFrom('calls').selectAll()
      if (q.recipe !== undefined) query = query.where('recipe', '=', q.recipe)
      if (q.campaign !== undefined) query = query.where('campaign', '=', q.campaign)
      if (q.status !== undefined) query = query.where('status', 'in', list(q.status))
      if (q.customerPhone !== undefined) query = query.where('customer_phone', '=', q.customerPhone)
      if (q.since !== undefined) query = query.where('created_at', '>=', ms(q.since))
      const rows = await query.orderBy('created_at', 'desc').orderBy('id').limit(q.limit ?? 1000).execute()
      return rows.map(toCallRecord)
    },
  }
}
