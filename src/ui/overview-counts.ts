import { countCallsByStatus } from '../calls/list-calls.ts'
import { forwardingTotals } from '../destinations/deliveries.ts'
import { dayRange, localDate } from '../reports/day-range.ts'
import { countMailByStatus } from '../reports/mail-log.ts'
import type { Runtime } from '../runtime.ts'
import { defineProcessingTask } from '../coordination/processing-task.ts'
import { countEventsByHour, countReceived } from '../webhooks/events.ts'
import { inboxBacklog } from './backlog.ts'

const HOUR = 3_600_000

/**
 * The overview's figures at `now`: the counting queries behind its cards and charts. With a million stored
 * events they take 65–150 ms of synchronous SQLite, every 15 s while a dashboard is open, so under `serve` they
 * run in the processing thread (`overviewCountsTask`) and the receiver's loop only renders the result.
 */
export async function overviewCounts(rt: Runtime, now: number) {
  const tz = rt.config.recipes.timezone
  const today = dayRange(localDate(now, tz), tz)
  const firstHour = Math.floor(now / HOUR) * HOUR - 23 * HOUR
  const [backlog, last5, lastHour, hourly, mail, calls, forwarding] = await Promise.all([
    inboxBacklog(rt),
    countReceived(rt, now - 5 * 60_000, now + 1),
    countReceived(rt, now - HOUR, now + 1),
    countEventsByHour(rt, firstHour, now + 1),
    countMailByStatus(rt, now - 7 * 24 * HOUR),
    countCallsByStatus(rt, today.startMs, today.endMs),
    // Only where events are forwarded (DESTINATIONS): the card would say nothing otherwise.
    rt.config.destinations.list.length > 0 ? forwardingTotals(rt) : null,
  ])
  return { firstHour, backlog, last5, lastHour, hourly, mail, calls, forwarding }
}

export type OverviewCounts = Awaited<ReturnType<typeof overviewCounts>>

/** The overview's counts, off the receiver's loop (refreshed every 15 s while a dashboard is open). */
export const overviewCountsTask = defineProcessingTask('overviewCounts', (rt, args: { now: number }) => overviewCounts(rt, args.now))
