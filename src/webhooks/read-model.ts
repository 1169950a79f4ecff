import type { Selectable, Transaction } from 'kysely'
import type { Runtime } from '../runtime.ts'
import type { ConversationsTable, Database } from '../db/schema.ts'
import { fromJson, toJson } from '../db/json.ts'
import { insertRows } from '../db/insert-rows.ts'
import { MAX_PHONE_LENGTH } from '../upstream/id-limits.ts'
import { contactKey } from '../campaigns/contact-key.ts'
import { EARLIEST_KEPT_MS, LATEST_KEPT_MS } from '../utils/time-range.ts'
import type { ProcessedEvent } from '../events/hooks.ts'
import { providerTimeMs } from '../utils/iso-datetime.ts'
import { adoptLostAnswers } from '../calls/lost-answer-traces.ts'
import {
  isTerminalStatus,
  parseWebhookTranscript,
  type RetryContext,
  type TranscriptTurn,
  type WebhookEvent,
  type WebhookRetry,
} from '../upstream/schemas.ts'

/** A conversation as the read model keeps it (JSON columns parsed). */
export interface StoredConversation {
  conversation_id: string
  agent_id: number
  contact_number: string | null
  status: string
  terminal: boolean
  duration_seconds: number | null
  started_at: number | null
  ended_at: number | null
  failure_reason: string | null
  trace_id: string | null
  from_phone: string | null
  recording_url: string | null
  transcript: TranscriptTurn[] | null
  results: Record<string, unknown> | null
  call_parameters: Record<string, string> | null
  retry: WebhookRetry | null
  retry_context: RetryContext | null
  last_event_at: number
  last_event_id: string | null
  source: 'webhook' | 'reconcile'
  created_at: number
  updated_at: number
}

type Row = Selectable<ConversationsTable>

export function toStoredConversation(row: Row): StoredConversation {
  // The contact key is the table's own index of the number (src/campaigns/contact-key.ts), not part of the conversation.
  const { contact_key: _key, ...fields } = row
  return {
    ...fields,
    terminal: row.terminal === 1,
    transcript: fromJson<TranscriptTurn[]>(row.transcript),
    results: fromJson<Record<string, unknown>>(row.results),
    call_parameters: fromJson<Record<string, string>>(row.call_parameters),
    retry: fromJson<WebhookRetry>(row.retry),
    retry_context: fromJson<RetryContext>(row.retry_context),
    source: row.source === 'reconcile' ? 'reconcile' : 'webhook',
  }
}

/** An ISO time as epoch ms, or null: missing, unreadable, or outside the years a conversation keeps (1–9999). */
function isoToMs(iso: string | null | undefined): number | null {
  if (!iso) return null
  const ms = providerTimeMs(iso)
  return Number.isFinite(ms) && ms >= EARLIEST_KEPT_MS && ms <= LATEST_KEPT_MS ? ms : null
}

/**
 * The longest duration kept as a call's: a day. Past it — or below 0 — the figure is no call's length, and is kept as
 * missing, as one that is not a number is: `-5000` and `2000000000` were stored and averaged, and the day's report read
 * `avg 16666625 min 00 s` (or a negative average). It also keeps the value inside Postgres's `integer` column, one past
 * which (2^31 s) failed the event until it was dead.
 */
const MAX_DURATION_SECONDS = 86_400

function durationSeconds(seconds: number | null): number | null {
  if (seconds === null || !Number.isFinite(seconds)) return null
  const rounded = Math.round(seconds)
  return rounded >= 0 && rounded <= MAX_DURATION_SECONDS ? rounded : null
}

function emptyToNull<T extends object>(value: T | null | undefined): T | null {
  if (!value) return null
  return Object.keys(value).length === 0 ? null : value
}

/** The event's own time (ms): its `timestamp`, else when the call ended, else when it was received. */
export function eventTimeMs(event: WebhookEvent, receivedAt: number): number {
  return isoToMs(event.timestamp) ?? isoToMs(event.data.call.ended_at) ?? receivedAt
}

/**
 * The number a conversation is filed under, or null for a `to_phone` longer than any phone number: the column is
 * indexed, and Postgres refuses an index entry past ~2,700 bytes — the event failed until it was dead and its
 * outcome never reached the read model. The rest of the conversation is kept (warnOfUnfiledNumbers says why).
 */
function contactNumber(toPhone: string): string | null {
  return toPhone.length <= MAX_PHONE_LENGTH ? toPhone : null
}

/** One warning per event whose `to_phone` the read model leaves out (contactNumber). */
function warnOfUnfiledNumbers(rt: Runtime, facts: readonly ReadModelFact[]): void {
  for (const { event } of facts) {
    const call = event.data.call
    if (contactNumber(call.to_phone) !== null) continue
    rt.log.warn(
      { event_id: event.event_id, conversation_id: call.conversation_id, trace_id: call.trace_id, to_phone_length: call.to_phone.length },
      `the event's to_phone is longer than any phone number (${MAX_PHONE_LENGTH} characters); its conversation is kept without a contact number`,
    )
  }
}

/** The facts one event carries, as a row (JSON as text). */
function rowFromEvent(event: WebhookEvent, source: 'webhook' | 'reconcile', at: number, now: number, defaultCountry: string | undefined): Row {
  const call = event.data.call
  const transcript = parseWebhookTranscript(event.data.transcript)
  const number = contactNumber(call.to_phone)
  return {
    conversation_id: call.conversation_id,
    agent_id: call.agent_id,
    contact_number: number,
    contact_key: contactKey(number, defaultCountry),
    status: call.status,
    terminal: isTerminalStatus(call.status) ? 1 : 0,
    duration_seconds: durationSeconds(call.duration_seconds),
    started_at: isoToMs(call.started_at),
    ended_at: isoToMs(call.ended_at),
    failure_reason: call.failure_reason,
    trace_id: call.trace_id,
    from_phone: call.from_phone,
    recording_url: call.recording_url,
    transcript: transcript.length > 0 ? toJson(transcript) : null,
    results: toJson(emptyToNull(event.data.results)),
    call_parameters: toJson(emptyToNull(call.call_parameters)),
    retry: toJson(event.data.retry ?? null),
    retry_context: toJson(event.data.retry_context ?? null),
    last_event_at: at,
    last_event_id: event.event_id,
    source,
    created_at: now,
    updated_at: now,
  }
}

/**
 * Arrival order is not trusted: a terminal status always beats a non-terminal one, and between facts of
 * the same kind the newer event time wins. Fields the winner lacks (a target without transcripts, a
 * reconciled record without call parameters) are filled from the other fact.
 */
export function mergeConversation(existing: Row, incoming: Row): Row {
  const incomingWins =
    incoming.terminal > existing.terminal || (incoming.terminal === existing.terminal && incoming.last_event_at >= existing.last_event_at)
  const [win, lose] = incomingWins ? [incoming, existing] : [existing, incoming]
  const pick = <K extends keyof Row>(key: K): Row[K] => (win[key] ?? lose[key]) as Row[K]
  // The key goes with the number it was made from; the incoming fact's is freshly made (a row an older version wrote has none).
  const contact = win.contact_number !== null ? win : lose
  return {
    conversation_id: existing.conversation_id,
    agent_id: win.agent_id,
    contact_number: contact.contact_number,
    contact_key: contact.contact_number === incoming.contact_number ? incoming.contact_key : contact.contact_key,
    status: win.status,
    terminal: Math.max(existing.terminal, incoming.terminal),
    duration_seconds: pick('duration_seconds'),
    started_at: pick('started_at'),
    ended_at: pick('ended_at'),
    failure_reason: win.terminal ? win.failure_reason : pick('failure_reason'),
    trace_id: pick('trace_id'),
    from_phone: pick('from_phone'),
    recording_url: pick('recording_url'),
    transcript: pick('transcript'),
    results: pick('results'),
    call_parameters: pick('call_parameters'),
    retry: pick('retry'),
    retry_context: pick('retry_context'),
    last_event_at: win.last_event_at,
    last_event_id: win.last_event_id,
    source: win.source,
    created_at: existing.created_at,
    updated_at: incoming.updated_at,
  }
}

/** One event as the read model takes it. */
export interface ReadModelFact {
  event: WebhookEvent
  source: 'webhook' | 'reconcile'
  receivedAt: number
}

/** Every column of a conversation row, once (`satisfies` checks the list against the table: none missing, none extra). */
const ROW_COLUMNS = Object.keys({
  conversation_id: 1, agent_id: 1, contact_number: 1, contact_key: 1, status: 1, terminal: 1, duration_seconds: 1, started_at: 1, ended_at: 1,
  failure_reason: 1, trace_id: 1, from_phone: 1, recording_url: 1, transcript: 1, results: 1, call_parameters: 1, retry: 1,
  retry_context: 1, last_event_at: 1, last_event_id: 1, source: 1, created_at: 1, updated_at: 1,
} satisfies Record<keyof Row, 1>) as Array<keyof Row>
/** Columns an existing conversation takes from the merged row: all but its key and when it was created. */
const MERGED_COLUMNS = ROW_COLUMNS.filter((c) => c !== 'conversation_id' && c !== 'created_at')

/**
 * Splits `items` into chunks whose sizes are powers of two up to `max` (200 → 128, 64, 8): statements per
 * batch stay few, and their SQL texts few enough to stay prepared (src/db/statement-cache.ts).
 */
function powerOfTwoChunks<T>(items: T[], max = 256): T[][] {
  const chunks: T[][] = []
  let at = 0
  while (at < items.length) {
    let size = max
    while (size > items.length - at) size >>= 1
    chunks.push(items.slice(at, at + size))
    at += size
  }
  return chunks
}

/**
 * Applies events inside a caller's transaction, set-based: the events of each conversation are merged in
 * memory (in the order given — the merge does not depend on it), new conversations are inserted in one
 * statement per chunk, and the existing ones read (row-locked on Postgres, in key order), merged and
 * written back with one upsert per chunk. Returns each touched conversation as stored.
 */
export async function applyEventsInTransaction(
  trx: Transaction<Database>,
  dialect: 'sqlite' | 'postgres',
  facts: ReadModelFact[],
  now: number,
  defaultCountry: string | undefined,
): Promise<Map<string, Row>> {
  const incoming = new Map<string, Row>()
  for (const { event, source, receivedAt } of facts) {
    const row = rowFromEvent(event, source, eventTimeMs(event, receivedAt), now, defaultCountry)
    const earlier = incoming.get(row.conversation_id)
    incoming.set(row.conversation_id, earlier ? mergeConversation(earlier, row) : row)
  }
  const rows = [...incoming.values()].sort((a, b) => (a.conversation_id < b.conversation_id ? -1 : a.conversation_id > b.conversation_id ? 1 : 0))
  const stored = new Map<string, Row>()
  // Insert first: a conversation another replica creates meanwhile conflicts here (and waits for its
  // commit on Postgres) instead of being overwritten by an upsert that never saw it.
  for (const chunk of powerOfTwoChunks(rows)) {
    const inserted = await insertRows(trx, dialect, 'conversations', ROW_COLUMNS, chunk, { onConflict: { columns: ['conversation_id'] }, returning: ['conversation_id'] })
    for (const { conversation_id } of inserted) stored.set(conversation_id, incoming.get(conversation_id)!)
  }
  // A follow-up whose answer was lost gets its trace id from its conversation (src/calls/lost-answer-traces.ts): looked
  // for once, when the conversation is new — not again for each later event of it (the hot path's extra read).
  await adoptLostAnswers(trx, stored.values())
  const existingIds = rows.filter((r) => !stored.has(r.conversation_id)).map((r) => r.conversation_id)
  for (const ids of powerOfTwoChunks(existingIds)) {
    let select = trx.selectFrom('conversations').selectAll().where('conversation_id', 'in', ids).orderBy('conversation_id')
    if (dialect === 'postgres') select = select.forUpdate()
    const merged = (await select.execute()).map((existing) => mergeConversation(existing, incoming.get(existing.conversation_id)!))
    if (merged.length === 0) continue
    await insertRows(trx, dialect, 'conversations', ROW_COLUMNS, merged, { onConflict: { columns: ['conversation_id'], update: MERGED_COLUMNS } })
    for (const row of merged) stored.set(row.conversation_id, row)
  }
  return stored
}

/**
 * The read model's step of the pipeline: the provider events of a batch in one transaction — one commit
 * (one fsync on SQLite) per batch, a few statements rather than several per event. If the batch fails,
 * each event is retried on its own so one bad event cannot hold back the others. Named targets' events
 * never reach it. Returns the error of each event that failed.
 */
export async function applyReadModelBatch(rt: Runtime, items: ProcessedEvent[]): Promise<Map<string, Error>> {
  const errors = new Map<string, Error>()
  if (items.length === 0) return errors
  const now = rt.clock.now()
  warnOfUnfiledNumbers(rt, items)
  try {
    await rt.store.db.transaction().execute((trx) => applyEventsInTransaction(trx, rt.store.dialect, items, now, rt.config.defaultCountry))
    return errors
  } catch {
    for (const p of items) {
      try {
        await rt.store.db.transaction().execute((trx) => applyEventsInTransaction(trx, rt.store.dialect, [p], now, rt.config.defaultCountry))
      } catch (error) {
        errors.set(p.eventId, error as Error)
      }
    }
    return errors
  }
}

/** Applies one event to the conversations read model, in its own transaction. */
export async function applyEventToReadModel(
  rt: Runtime,
  event: WebhookEvent,
  source: 'webhook' | 'reconcile',
  receivedAt: number,
): Promise<StoredConversation> {
  const now = rt.clock.now()
  warnOfUnfiledNumbers(rt, [{ event, source, receivedAt }])
  const stored = await rt.store.db.transaction().execute((trx) => applyEventsInTransaction(trx, rt.store.dialect, [{ event, source, receivedAt }], now, rt.config.defaultCountry))
  return toStoredConversation(stored.get(event.data.call.conversation_id)!)
}

/** One conversation from the read model, or undefined. */
export async function getConversation(rt: Runtime, conversationId: string): Promise<StoredConversation | undefined> {
  const row = await rt.store.db.selectFrom('conversations').selectAll().where('conversation_id', '=', conversationId).executeTakeFirst()
  return row ? toStoredConversation(row) : undefined
}

export interface ConversationFilter {
  agentId?: number
  status?: string | string[]
  terminal?: boolean
  contactNumber?: string
  traceId?: string
  /** Ended (or, when not ended, last updated by an event) at or after this time, epoch ms. */
  fromMs?: number
  /** …and before this time, epoch ms. */
  toMs?: number
  limit?: number
  offset?: number
}

/** Conversations from the read model, newest event first. */
export async function listConversations(rt: Runtime, filter: ConversationFilter = {}): Promise<StoredConversation[]> {
  let q = rt.store.db.selectFrom('conversations').selectAll()
  if (filter.agentId !== undefined) q = q.where('agent_id', '=', filter.agentId)
  if (filter.status !== undefined) q = q.where('status', 'in', Array.isArray(filter.status) ? filter.status : [filter.status])
  if (filter.terminal !== undefined) q = q.where('terminal', '=', filter.terminal ? 1 : 0)
  if (filter.contactNumber !== undefined) q = q.where('contact_number', '=', filter.contactNumber)
  if (filter.traceId !== undefined) q = q.where('trace_id', '=', filter.traceId)
  if (filter.fromMs !== undefined) q = q.where('last_event_at', '>=', filter.fromMs)
  if (filter.toMs !== undefined) q = q.where('last_event_at', '<', filter.toMs)
  const rows = await q
    .orderBy('last_event_at', 'desc')
    .orderBy('conversation_id')
    .limit(Math.min(Math.max(filter.limit ?? 100, 1), 10_000))
    .offset(Math.max(filter.offset ?? 0, 0))
    .execute()
  return rows.map(toStoredConversation)
}
