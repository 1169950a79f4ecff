/**
 * An ISO 8601 date-time with its time zone (`Z` or an offset): what the provider takes for `scheduled_for`. A time
 * without one is refused rather than read: `Date.parse` would read it in the server's own zone (TZ), so the same
 * recipe called people at different hours on different machines.
 */
const ISO_DATETIME_WITH_ZONE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|[+-](\d{2}):?(\d{2}))$/i

/**
 * True for an ISO 8601 date-time with a time zone that names a real instant. Each field is checked against the
 * calendar: `Date.parse` rolls 2026-02-30 over to March 2nd, and a call scheduled for a day that does not exist
 * was placed on another one.
 */
export function isZonedIsoDateTime(text: string): boolean {
  const m = ISO_DATETIME_WITH_ZONE.exec(text)
  if (!m || !Number.isFinite(Date.parse(text))) return false
  const [year, month, day, hour, minute, second, offsetHours, offsetMinutes] = m.slice(1).map((v) => (v === undefined ? 0 : Number(v))) as number[]
  const date = new Date(Date.UTC(year!, month! - 1, day!))
  const realDay = date.getUTCFullYear() === year && date.getUTCMonth() === month! - 1 && date.getUTCDate() === day
  return realDay && hour! <= 23 && minute! <= 59 && second! <= 59 && offsetHours! <= 23 && offsetMinutes! <= 59
}

/**
 * A day (`2026-03-01`: its UTC midnight) or an ISO 8601 time with its zone, as epoch ms; undefined for anything else —
 * not whatever `Date.parse` makes of "March 7" (2001-03-07), "1", or a zoneless time (read in the server's zone).
 * What `--since`/`--until` and the admin routes' `since`/`until` take.
 */
export function parseDayOrInstant(text: string): number | undefined {
  const trimmed = text.trim()
  const instant = /^\d{4}-\d{2}-\d{2}$/.test(trimmed) ? `${trimmed}T00:00:00Z` : trimmed
  return isZonedIsoDateTime(instant) ? Date.parse(instant) : undefined
}

/** An ISO 8601 date-time with no zone (`2026-11-20T18:29:00`, seconds and fraction optional). */
const ZONELESS_DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?$/

/**
 * A time the provider sent (a webhook's `timestamp`, a call's `started_at`, a batch's `created_at`) as epoch ms, NaN
 * when it is none. One without a zone is read as UTC, as the provider's times are: `Date.parse` read it in the
 * server's own zone, so the same event fell on another day of the report on a machine with another TZ.
 */
export function providerTimeMs(iso: string): number {
  return Date.parse(ZONELESS_DATETIME.test(iso) ? `${iso}Z` : iso)
}
