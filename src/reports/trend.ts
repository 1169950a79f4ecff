import type { Runtime } from '../runtime.ts'
import { addDays, dayRange } from './day-range.ts'
import { inDay } from './day-of-conversation.ts'
import { CONNECTED_STATUSES, rate } from './figures.ts'

export interface TrendDay {
  date: string
  calls: number
  completed: number
  connected: number
  connectRate: number | null
  successRate: number | null
}

export interface DayChange {
  /** The day compared with (the previous calendar day). */
  previous: TrendDay
  calls: number
  /** Percentage points; null when either day had no calls. */
  connectRate: number | null
  successRate: number | null
}

/** Counts by status for one day (same day rule as the report's rows), aggregated in the database. */
async function dayTotals(rt: Runtime, date: string, timezone: string): Promise<TrendDay> {
  const { startMs, endMs } = dayRange(date, timezone)
  const rows = await rt.store.db
    .selectFrom('conversations')
    .select((eb) => ['status', eb.fn.countAll<number>().as('n')])
    .where(inDay('', startMs, endMs))
    .groupBy('status')
    .execute()
  let calls = 0
  let completed = 0
  let connected = 0
  for (const r of rows) {
    const n = Number(r.n)
    calls += n
    if (r.status === 'completed') completed += n
    if (CONNECTED_STATUSES.includes(r.status)) connected += n
  }
  return { date, calls, completed, connected, connectRate: rate(connected, calls), successRate: rate(completed, calls) }
}

/** A day's counts already computed from its rows (the report's own day): no second pass over them. */
export interface KnownDay {
  calls: number
  completed: number
  connected: number
}

/**
 * The `days` days ending with `date` (oldest first), plus the day before the first for the change. `known`
 * gives the figures of `date` itself when the caller has them (the same day rule), saving a query over the
 * day's largest set of rows.
 */
export async function buildTrend(rt: Runtime, date: string, timezone: string, days = 7, known?: KnownDay): Promise<{ trend: TrendDay[]; change: DayChange }> {
  const dates = Array.from({ length: days }, (_, i) => addDays(date, i - days + 1))
  const trend: TrendDay[] = []
  for (const d of dates) {
    if (d === date && known) {
      const { calls, completed, connected } = known
      trend.push({ date: d, calls, completed, connected, connectRate: rate(connected, calls), successRate: rate(completed, calls) })
    } else trend.push(await dayTotals(rt, d, timezone))
  }
  const today = trend[trend.length - 1]!
  const previous = trend.length > 1 ? trend[trend.length - 2]! : await dayTotals(rt, addDays(date, -1), timezone)
  const diff = (a: number | null, b: number | null) => (a === null || b === null ? null : Math.round((a - b) * 10) / 10)
  return {
    trend,
    change: {
      previous,
      calls: today.calls - previous.calls,
      connectRate: diff(today.connectRate, previous.connectRate),
      successRate: diff(today.successRate, previous.successRate),
    },
  }
}
