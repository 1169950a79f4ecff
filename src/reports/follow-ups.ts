import { latestAttempts } from '../calls/latest-attempt.ts'
import type { Runtime } from '../runtime.ts'
import type { DayRange } from './day-range.ts'
import type { CountItem } from './figures.ts'

export interface FollowUps {
  /** Follow-up calls switchboard scheduled or placed that day (ledger rows continuing an earlier conversation). */
  scheduled: number
  /**
   * Follow-ups of that day the provider refused (or that failed before it took them): never scheduled nor placed, so
   * not in `scheduled`, but in `outcomes` as `rejected` / `failed`, for they are work a recipe planned.
   */
  refused: number
  /** Their outcomes so far: the conversation's status, else the ledger status (scheduled, pending, failed…). */
  outcomes: CountItem[]
  /** How many of them completed. */
  completed: number
}

/** Ledger statuses of a call the provider refused or that failed before it was taken. */
const NOT_PLACED = new Set(['rejected', 'failed'])

export async function loadFollowUps(rt: Runtime, range: Pick<DayRange, 'startMs' | 'endMs'>): Promise<FollowUps> {
  const rows = await rt.store.db
    .selectFrom('calls as k')
    .leftJoin('conversations as c', 'c.trace_id', 'k.trace_id')
    .select(['k.id', 'k.status as call_status', 'c.status as conversation_status', 'c.conversation_id', 'c.last_event_at', 'c.retry'])
    .where('k.created_at', '>=', range.startMs)
    .where('k.created_at', '<', range.endMs)
    // A follow-up continues an earlier conversation, whoever placed it; a recipe's first calls (new leads) are not.
    .where('k.previous_conversation_id', 'is not', null)
    .execute()
  // A call the platform retried has a conversation per attempt, all with the call's trace id: its outcome is its
  // latest attempt's (src/calls/latest-attempt.ts), not whichever the join returned first — a follow-up that
  // completed on the platform's second attempt counted as no_answer.
  const latest = latestAttempts(rows, (r) => r.id)
  const outcomes = new Map<string, number>()
  let refused = 0
  for (const r of latest.values()) {
    const outcome = r.conversation_status ?? r.call_status
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1)
    // No conversation, and the ledger says the provider never took it: counted "scheduled or placed", it was neither.
    if (r.conversation_status === null && NOT_PLACED.has(r.call_status)) refused++
  }
  return {
    scheduled: latest.size - refused,
    refused,
    outcomes: [...outcomes].map(([value, count]) => ({ value, count })).sort((a, b) => b.count - a.count || a.value.localeCompare(b.value)),
    completed: outcomes.get('completed') ?? 0,
  }
}
