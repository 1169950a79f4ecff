import type { Runtime } from '../runtime.ts'
import { fromJson } from '../db/json.ts'
import type { EventRow } from './processing.ts'

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
  received_at: string
  next_attempt_at: string | null
  processed_at: string | null
  last_error: string | null
}

export interface StoredEventDetail extends StoredEvent {
  headers: Record<string, string>
  body: unknown
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

export function toStoredEvent(row: EventRow): StoredEvent {
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
    received_at: iso(row.received_at)!,
    next_attempt_at: row.status === 'pending' || row.status === 'failed' ? iso(row.next_attempt_at) : null,
    processed_at: iso(row.processed_at),
    last_error: row.last_error,
  }
}

export interface EventFilter {
  type?: string
  status?: string
  conversationId?: string
  source?: string
  limit?: number
  offset?: number
}

/** Stored events, newest first. */
export async function listEvents(rt: Runtime, filter: EventFilter = {}): Promise<StoredEvent[]> {
  let q = rt.store.db.selectFrom('webhook_events').selectAll()
  if (filter.type) q = q.where('event_type', '=', filter.type)
  if (filter.status) q = q.where('status', '=', filter.status)
  if (filter.conversationId) q = q.where('conversation_id', '=', filter.conversationId)
  if (filter.source) q = q.where('source', '=', filter.source)
  const rows = await q
    .orderBy('received_at', 'desc')
    .orderBy('event_id')
    .limit(Math.min(Math.max(filter.limit ?? 50, 1), 10_000))
    .offset(Math.max(filter.offset ?? 0, 0))
    .execute()
  return rows.map(toStoredEvent)
}

/** One stored event with its body and audit headers, or undefined. */
export async function getEvent(rt: Runtime, eventId: string): Promise<StoredEventDetail | undefined> {
  const row = await rt.store.db.selectFrom('webhook_events').selectAll().where('event_id', '=', eventId).executeTakeFirst()
  if (!row) return undefined
  let body: unknown
  try {
    body = JSON.parse(row.body)
  } catch {
    body = row.body
  }
  return { ...toStoredEvent(row), headers: fromJson<Record<string, string>>(row.headers) ?? {}, body }
}
