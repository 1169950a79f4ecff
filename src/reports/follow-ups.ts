import type { Runtime } from '../runtime.ts'
import type { DayRange } from './day-range.ts'
import type { CountItem } from './figures.ts'

export interface FollowUps {
  /** Follow-up calls switchboard scheduled or placed that day (ledger rows with a previous conversation or a recipe). */
  scheduled: number
  /** Their outcomes so far: the conversation's status, else the ledger status (scheduled, pending, failed…). */
  outcomes: CountItem[]
  /** How many of them completed. */
  completed: number
}

export async function loadFollowUps(rt: Runtime, range: Pick<DayRange, 'startMs' | 'endMs'>): Promise<FollowUps> {
  const rows = await rt.store.db
    .selectFrom('calls as k')
    .leftJoin('conversations as c', 'c.trace_id', 'k.trace_id')
    .select(['k.id', 'k.status as call_status', 'c.status as conversation_status'])
    .where('k.created_at', '>=', range.startMs)
    .where('k.created_at', '<', range.endMs)
    .where((eb) => eb.or([eb('k.previous_conversation_id', 'is not', null), eb('k.recipe', 'is not', null)]))
    .execute()
  const seen = new Set<string>()
  const outcomes = new Map<string, number>()
  for (const r of rows) {
    if (seen.has(r.id)) continue
    seen.add(r.id)
    const outcome = r.conversation_status ?? r.call_status
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1)
  }
  return {
    scheduled: seen.size,
    outcomes: [...outcomes].map(([value, count]) => ({ value, count })).sort((a, b) => b.count - a.count || a.value.localeCompare(b.value)),
    completed: outcomes.get('completed') ?? 0,
  }
}
