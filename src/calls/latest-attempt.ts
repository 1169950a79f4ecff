import { fromJsonOrNull } from '../db/json.ts'

/**
 * A conversation of one call: a call the provider retried itself has one per attempt, all with the call's trace id
 * (`…_1`, `…_2`), and its outcome is its last attempt's.
 */
export interface AttemptOfCall {
  conversation_id: string | null
  /** The event's own time of its latest event (the read model's `last_event_at`). */
  last_event_at: number | null
  /** The webhook's `retry` block, as stored (JSON text): `attempt_number` says which attempt the conversation is. */
  retry: string | null
}

function attemptNumber(retry: string | null): number {
  const n = fromJsonOrNull<{ attempt_number?: unknown }>(retry)?.attempt_number
  return typeof n === 'number' && Number.isFinite(n) ? n : 0
}

function chainSuffix(conversationId: string | null): number {
  const match = conversationId === null ? null : /_(\d+)$/.exec(conversationId)
  return match ? Number(match[1]) : 0
}

/**
 * Whether `a` is a later attempt of its call than `b`: by the attempt number the provider gave, then the time of the
 * last event, then the conversation id's chain suffix. The attempt number first: a webhook for attempt 1 delivered late
 * (a provider's retry of it, stamped when sent) made attempt 1 the call's outcome — `no_answer` for a call that
 * completed on its second attempt — and which row came last from the database decided it, differently on each dialect.
 */
export function isLaterAttempt(a: AttemptOfCall, b: AttemptOfCall): boolean {
  const an = attemptNumber(a.retry)
  const bn = attemptNumber(b.retry)
  if (an !== bn) return an > bn
  const at = Number(a.last_event_at ?? -1)
  const bt = Number(b.last_event_at ?? -1)
  return at !== bt ? at > bt : chainSuffix(a.conversation_id) > chainSuffix(b.conversation_id)
}

/** The latest attempt of each key's conversations (a call's id, or its trace id). */
export function latestAttempts<R extends AttemptOfCall>(rows: readonly R[], keyOf: (row: R) => string): Map<string, R> {
  const latest = new Map<string, R>()
  for (const row of rows) {
    const key = keyOf(row)
    const kept = latest.get(key)
    if (!kept || isLaterAttempt(row, kept)) latest.set(key, row)
  }
  return latest
}
