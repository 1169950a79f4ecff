import { sql, type RawBuilder, type SqlBool } from 'kysely'

/** The conversations table as a query names it: `c.` in the report's join, bare in the trend's count. */
type Prefix = '' | 'c.'

/**
 * The instant that files a conversation under a day (the report's rows, its trend, the campaigns page): when it
 * ended. A finished call the provider sent without `ended_at` is filed where it happened, as near its end as the data
 * gives: its `started_at` plus its duration, else the time of the event that reported it (its `timestamp`, kept as
 * `last_event_at`) — it landed on the day switchboard recorded it, a day late when the webhook or reconciliation came
 * after midnight. Only a call still under way counts on the day switchboard first recorded it (`created_at`).
 */
export function dayInstant(prefix: Prefix): RawBuilder<number> {
  const c = (column: string) => sql.ref(`${prefix}${column}`)
  return sql<number>`coalesce(${c('ended_at')}, case when ${c('terminal')} = 1 then coalesce(${c('started_at')} + coalesce(${c('duration_seconds')}, 0) * 1000, ${c('last_event_at')}) else ${c('created_at')} end)`
}

/**
 * The conversations of [startMs, endMs) by `dayInstant`, as two ranges: on `ended_at` (its index), and — among the
 * conversations with none, which that index also finds — on the instant that stands in for it.
 */
export function inDay(prefix: Prefix, startMs: number, endMs: number): RawBuilder<SqlBool> {
  const ended = sql.ref(`${prefix}ended_at`)
  const instant = dayInstant(prefix)
  return sql<SqlBool>`((${ended} >= ${startMs} and ${ended} < ${endMs}) or (${ended} is null and ${instant} >= ${startMs} and ${instant} < ${endMs}))`
}

/**
 * The conversations whose `dayInstant` is at or after `ms` (`'>='`) or before it (`'<'`): `ended_at` through its index,
 * and among those with none, the instant that stands in for it — a recipe's `endedSince` / `endedBefore`.
 */
export function endedAt(prefix: Prefix, op: '>=' | '<', ms: number): RawBuilder<SqlBool> {
  const ended = sql.ref(`${prefix}ended_at`)
  const compare = sql.raw(op)
  return sql<SqlBool>`((${ended} ${compare} ${ms}) or (${ended} is null and ${dayInstant(prefix)} ${compare} ${ms}))`
}
