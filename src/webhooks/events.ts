import { sql, type RawBuilder, type SqlBool } from 'kysely'
import { jsonNestedDeeperThan } from '../utils/json-depth.ts'
import { indentJson } from '../utils/indent-json.ts'
import type { Dialect } from '../db/connect.ts'
import type { Runtime } from '../runtime.ts'
import { fromJson } from '../db/json.ts'
import { contactIn, contactNumbers } from '../campaigns/contact-lookup.ts'
import type { EventRow } from './processing.ts'
import { keyedLookup } from './keyed-lookup.ts'

export const EVENT_STATUSES = ['pending', 'processed', 'failed', 'dead'] as const
export type EventStatus = (typeof EVENT_STATUSES)[number]

/** A stored event as listings show it (the body and audit headers parsed when asked for). */
export interface StoredEvent {
  event_id: string
  event_type: string
  target: string
  source: string
  status: string
  attempts: number
  duplicates: number
  conversation_id: string | null
  trace_id: string | null
  agent_id: number | null
  /** The number called (`data.call.to_phone`, else the `customer_phone` call parameter), when the body has one. */
  customer_phone: string | null
  received_at: string
  next_attempt_at: string | null
  processed_at: string | null
  last_error: string | null
}

export interface StoredEventDetail extends StoredEvent {
  headers: Record<string, string>
  /** The body parsed (text that is not JSON stays text): numbers past a double's precision and repeated keys are lost. */
  body: unknown
  /** The body as it arrived and is stored, byte for byte: what the sender signed, and what the pages and CLI show. */
  raw_body: string
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

/** The number an event is about (see `customer_phone`), from a parsed body. */
function phoneOf(body: string): string | null {
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    return null
  }
  const call = (parsed as { data?: { call?: { to_phone?: unknown; call_parameters?: { customer_phone?: unknown } } } } | null)?.data?.call
  const phone = call?.to_phone ?? call?.call_parameters?.customer_phone
  return typeof phone === 'string' && phone ? phone : null
}

/**
 * `phoneOf` in SQL, for listings: the row has no column for the number, and loading each listed body (up to
 * 1 MB, 10,000 rows a page) to read one field cost more than the rest of the listing. Same rule: `to_phone`
 * unless it is missing or null, else `customer_phone`; a value that is not a non-empty string is no number.
 * Postgres reads the body as `json`, not `jsonb`: bodies are JSON (the receiver refuses anything else) and
 * `json` accepts every JSON text, `\u0000` escapes included.
 */
function phoneColumn(dialect: Dialect): RawBuilder<string | null> {
  if (dialect === 'postgres') {
    return sql<string | null>`(select case
      when coalesce(json_typeof(c -> 'to_phone'), 'null') <> 'null'
        then case when json_typeof(c -> 'to_phone') = 'string' then nullif(c ->> 'to_phone', '') end
      else case when json_typeof(c #> '{call_parameters,customer_phone}') = 'string' then nullif(c #>> '{call_parameters,customer_phone}', '') end
    end from (select body::json #> '{data,call}' as c) as event_call)`
  }
  // A body that is not JSON would make json_type throw: it has no number, as for phoneOf.
  return sql<string | null>`(case when json_valid(body) then case
      when coalesce(json_type(body, '$.data.call.to_phone'), 'null') <> 'null'
        then case when json_type(body, '$.data.call.to_phone') = 'text' then nullif(json_extract(body, '$.data.call.to_phone'), '') end
      else case when json_type(body, '$.data.call.call_parameters.customer_phone') = 'text' then nullif(json_extract(body, '$.data.call.call_parameters.customer_phone'), '') end
    end end)`
}

/** The columns a listing shows: every one but the body and the audit headers. */
const LISTED_COLUMNS = [
  'event_id', 'event_type', 'target', 'source', 'status', 'attempts', 'duplicates', 'conversation_id', 'trace_id', 'agent_id',
  'received_at', 'next_attempt_at', 'processed_at', 'last_error',
] as const

type ListedRow = Pick<EventRow, (typeof LISTED_COLUMNS)[number]>

function toStoredEvent(row: ListedRow, customerPhone: string | null): StoredEvent {
  return {
    event_id: row.event_id,
    event_type: row.event_type,
    target: row.target,
    source: row.source,
    status: row.status,
    attempts: row.attempts,
    duplicates: row.duplicates,
    conversation_id: row.conversation_id,
    trace_id: row.trace_id,
    agent_id: row.agent_id,
    customer_phone: customerPhone,
    received_at: iso(row.received_at)!,
    next_attempt_at: row.status === 'pending' || row.status === 'failed' ? iso(row.next_attempt_at) : null,
    processed_at: iso(row.processed_at),
    last_error: row.last_error,
  }
}

export interface EventFilter {
  type?: string
  /** The target the event was received on (`provider`, or a named target such as `crm`). */
  target?: string
  status?: string | string[]
  conversationId?: string
  source?: string
  /** The call's trace id (what the provider calls the call id). */
  traceId?: string
  /** A phone number (any form; normalized): events of conversations with it, or of calls placed to it. */
  phone?: string
  /** Received at or after / before (epoch ms). */
  since?: number
  until?: number
  /** Keyset pagination: events after this one in the listing order (newest first). */
  after?: { receivedAt: number; eventId: string }
  limit?: number
  offset?: number
}

/** Events whose number is read per statement, by id (listEvents). */
const PHONE_CHUNK = 500

/** Stored events, newest first (ties by id); keyset pagination with `after` stays fast deep into millions. */
export async function listEvents(rt: Runtime, filter: EventFilter = {}): Promise<StoredEvent[]> {
  const db = rt.store.db
  let q = db.selectFrom('webhook_events').select(LISTED_COLUMNS)
  if (filter.type) q = q.where('event_type', '=', filter.type)
  if (filter.target) q = q.where('target', '=', filter.target)
  if (filter.status) q = Array.isArray(filter.status) ? q.where('status', 'in', filter.status) : q.where('status', '=', filter.status)
  // By conversation, trace or phone through keyedLookup: those indexes hold no pending event (migration 0021).
  if (filter.conversationId) {
    const conversationId = filter.conversationId
    q = q.where((eb) => keyedLookup(eb, [eb('conversation_id', '=', conversationId)]))
  }
  if (filter.source) q = q.where('source', '=', filter.source)
  if (filter.traceId) {
    const traceId = filter.traceId
    q = q.where((eb) => keyedLookup(eb, [eb('trace_id', '=', traceId)]))
  }
  if (filter.since !== undefined) q = q.where('received_at', '>=', filter.since)
  if (filter.until !== undefined) q = q.where('received_at', '<', filter.until)
  if (filter.phone) {
    // Events carry no phone column: go through the read model and the calls ledger (both indexed by contact key), the
    // contact however its number was written (src/campaigns/contact-key.ts).
    const numbers = contactNumbers([{ number: filter.phone }], rt.config.defaultCountry)
    const conversations = db.selectFrom('conversations').select('conversation_id').where(contactIn(rt.store.dialect, 'conversations', numbers))
    const traces = db.selectFrom('calls').select('trace_id').where(contactIn(rt.store.dialect, 'calls', numbers)).where('trace_id', 'is not', null)
    // SQLite answers `a IN (…) OR b IN (…)` with one index search per side (MULTI-INDEX OR). Postgres cannot turn an OR
    // of IN-subqueries into index lookups: it walked the whole table newest first, filtering every row (1–6 s over a
    // million events); `= ANY(ARRAY(…))` makes each side a list it looks up by index (a BitmapOr, ~1 ms).
    q =
      rt.store.dialect === 'postgres'
        ? q.where((eb) => keyedLookup(eb, [sql<SqlBool>`${eb.ref('conversation_id')} = any(array(${conversations}))`, sql<SqlBool>`${eb.ref('trace_id')} = any(array(${traces}))`]))
        : q.where((eb) => keyedLookup(eb, [eb('conversation_id', 'in', conversations), eb('trace_id', 'in', traces)]))
  }
  if (filter.after) {
    const { receivedAt, eventId } = filter.after
    // `received_at <= r` first, so the time index bounds the scan; the OR only settles ties.
    q = q.where('received_at', '<=', receivedAt).where((eb) => eb.or([eb('received_at', '<', receivedAt), eb('event_id', '>', eventId)]))
  }
  const rows = await q
    .orderBy('received_at', 'desc')
    .orderBy('event_id')
    .limit(Math.min(Math.max(filter.limit ?? 50, 1), 10_000))
    .offset(Math.max(filter.offset ?? 0, 0))
    .execute()
  // The number each event is about comes from its body, read for the rows listed only: in the listing's own SELECT,
  // Postgres parsed the body of every row an OFFSET skipped too (10,050 bodies for the 50 at offset 10,000: 170 ms).
  const phones = new Map<string, string | null>()
  for (let i = 0; i < rows.length; i += PHONE_CHUNK) {
    const ids = rows.slice(i, i + PHONE_CHUNK).map((row) => row.event_id)
    try {
      const found = await db.selectFrom('webhook_events').select(['event_id', phoneColumn(rt.store.dialect).as('customer_phone')]).where('event_id', 'in', ids).execute()
      for (const row of found) phones.set(row.event_id, row.customer_phone)
    } catch (error) {
      // A body Postgres' json cannot read (half of a surrogate pair, stored by 0.20.0 or earlier) failed the whole
      // listing — a 500 on every page that reached it. Those rows' numbers are read here instead, as `events show` does.
      rt.log.debug({ err: (error as Error).message }, 'reading event phone numbers in SQL failed; reading the bodies')
      const bodies = await db.selectFrom('webhook_events').select(['event_id', 'body']).where('event_id', 'in', ids).execute()
      for (const row of bodies) phones.set(row.event_id, phoneOf(row.body))
    }
  }
  return rows.map((row) => toStoredEvent(row, phones.get(row.event_id) ?? null))
}

export interface EventHourCount {
  /** Start of the hour (epoch ms). */
  hour: number
  event_type: string
  status: string
  count: number
}

/** Events received in [fromMs, toMs) counted per hour, type and status (the dashboard's 24 h chart). */
export async function countEventsByHour(rt: Runtime, fromMs: number, toMs: number): Promise<EventHourCount[]> {
  const hour = sql<number>`(received_at / 3600000)`
  const rows = await rt.store.db
    .selectFrom('webhook_events')
    .select((eb) => [hour.as('h'), 'event_type', 'status', eb.fn.countAll<number>().as('n')])
    .where('received_at', '>=', fromMs)
    .where('received_at', '<', toMs)
    .groupBy([hour, 'event_type', 'status'])
    .execute()
  return rows.map((r) => ({ hour: Math.floor(Number(r.h)) * 3_600_000, event_type: r.event_type, status: r.status, count: Number(r.n) }))
}

/** Events received in [fromMs, toMs) (ingest rate). */
export async function countReceived(rt: Runtime, fromMs: number, toMs: number): Promise<number> {
  const row = await rt.store.db
    .selectFrom('webhook_events')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('received_at', '>=', fromMs)
    .where('received_at', '<', toMs)
    .executeTakeFirst()
  return Number(row?.n ?? 0)
}

/**
 * A stored body as the pages and the CLI show it: laid out as JSON (src/utils/indent-json.ts), every value as it
 * arrived — they showed it parsed and written again, a 20-digit number rounded and a repeated key gone, where they
 * promise the raw body. Text that is not JSON (or nested deeper than the receiver takes) is shown as it is.
 */
export function shownBody(event: Pick<StoredEventDetail, 'body' | 'raw_body'>): string {
  return typeof event.body === 'string' ? event.raw_body : indentJson(event.raw_body)
}

/** One stored event with its body and audit headers, or undefined. */
export async function getEvent(rt: Runtime, eventId: string): Promise<StoredEventDetail | undefined> {
  const row = await rt.store.db.selectFrom('webhook_events').selectAll().where('event_id', '=', eventId).executeTakeFirst()
  if (!row) return undefined
  // Text that is not JSON, or JSON nested deeper than the receiver takes now (stored by 0.20.0 or earlier), stays text:
  // every page, answer and command that shows a parsed body re-encodes it, and JSON.stringify ran out of stack.
  let body: unknown = row.body
  if (!jsonNestedDeeperThan(row.body)) {
    try {
      body = JSON.parse(row.body)
    } catch {
      body = row.body
    }
  }
  return { ...toStoredEvent(row, phoneOf(row.body)), headers: fromJson<Record<string, string>>(row.headers) ?? {}, body, raw_body: row.body }
}
