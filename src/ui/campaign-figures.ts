import { defineProcessingTask } from '../coordination/processing-task.ts'
import { dayRange } from '../reports/day-range.ts'
import { loadDayRows } from '../reports/day-rows.ts'
import { foldDay } from '../reports/fold-day.ts'
import { buildTrend } from '../reports/trend.ts'
import type { Runtime } from '../runtime.ts'

/**
 * The campaigns page's figures for one day: per campaign and per agent from the daily report's own code (day rows,
 * `foldDay`), and the 7- and 30-day trend. A busy day is 100,000 conversations read and folded — about
 * two seconds of synchronous SQLite — so under `serve` this runs in the processing thread (`campaignFiguresTask`)
 * and the receiver's loop, which answers the provider's webhooks, only renders the result.
 */
export async function campaignFigures(rt: Runtime, date: string, timezone: string) {
  const rows = await loadDayRows(rt, dayRange(date, timezone))
  const { totals, agents, campaigns } = foldDay(rows)
  // One 30-day trend, its last seven the week's, with the day itself from the rows just read (as the report does):
  // two trends counted 37 days, the day's — the busiest — twice more.
  const month = await buildTrend(rt, date, timezone, 30, totals)
  return { campaigns, agents, week: month.trend.slice(-7), month: month.trend }
}

export const campaignFiguresTask = defineProcessingTask('campaignFigures', (rt, args: { date: string; timezone: string }) =>
  campaignFigures(rt, args.date, args.timezone))
