/**
 * `Retry-After`, read strictly (RFC 9110 §10.2.3): delta-seconds, or an HTTP-date in one of its three forms
 * (§5.6.7). Anything else is no Retry-After at all. Strict because the lenient readers are wrong in the
 * dangerous direction: V8's `Date.parse` takes "1.5", "-1" or "10, 20" as dates in 2001 — a wait of 0 — and
 * `Number` takes "1e9" or "0x10"; a value a server got wrong must not decide how soon it is asked again.
 */

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
const MONTH = `(${MONTHS.join('|')})`
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})'

/** `Sun, 06 Nov 1994 08:49:37 GMT`: the form senders must use. Names are case-sensitive (§5.6.7). */
const IMF_FIXDATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`)
/** `Sunday, 06-Nov-94 08:49:37 GMT`: obsolete, but recipients must accept it. */
const RFC850_DATE = new RegExp(`^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`)
/** `Sun Nov  6 08:49:37 1994` (C's asctime): obsolete, but recipients must accept it. */
const ASCTIME_DATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ${MONTH} ( \\d|\\d{2}) ${TIME} (\\d{4})$`)

/** Milliseconds since the epoch, or undefined when a field is out of range (31 Feb, 25:00). */
function utc(year: number, month: string, day: string, hour: string, minute: string, second: string): number | undefined {
  const m = MONTHS.indexOf(month)
  const d = Number(day)
  // A leap second (60) is allowed by the grammar; it is read as the next second's start.
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second) > 60) return undefined
  const at = Date.UTC(year, m, d, Number(hour), Number(minute), Number(second))
  const date = new Date(at)
  return date.getUTCFullYear() === year && date.getUTCMonth() === m && date.getUTCDate() === d ? at : undefined
}

/**
 * A two-digit year more than 50 years ahead is the most recent past year with those digits (§5.6.7).
 * Date.UTC would map 0–99 to 1900–1999 by itself; the full year is worked out here instead.
 */
function fullYear(twoDigits: number, now: number): number {
  const current = new Date(now).getUTCFullYear()
  let year = current - (current % 100) + twoDigits
  if (year > current + 50) year -= 100
  return year
}

/**
 * An HTTP-date (§5.6.7: IMF-fixdate, or the two obsolete forms) as milliseconds since the epoch; undefined when `value`
 * is not one. `now` places a two-digit year. Read the same way in `Retry-After` and in the `Date` header.
 */
export function parseHttpDate(value: string, now: number): number | undefined {
  let m = IMF_FIXDATE.exec(value)
  if (m) return utc(Number(m[3]), m[2]!, m[1]!, m[4]!, m[5]!, m[6]!)
  m = RFC850_DATE.exec(value)
  if (m) return utc(fullYear(Number(m[3]), now), m[2]!, m[1]!, m[4]!, m[5]!, m[6]!)
  m = ASCTIME_DATE.exec(value)
  if (m) return utc(Number(m[6]), m[1]!, m[2]!.trim(), m[3]!, m[4]!, m[5]!)
  return undefined
}

/**
 * The wait a `Retry-After` asks for, in milliseconds from `now` (0 for a date already past); undefined when
 * the header is absent or not a valid value. Callers decide what a wait is worth (a floor, a cap).
 */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined
  const seconds = retryAfterSeconds(value)
  if (seconds !== undefined) return seconds * 1000
  const at = parseHttpDate(trimHeaderSpace(value), now)
  return at === undefined ? undefined : Math.max(0, at - now)
}

/** Only the field's optional whitespace is trimmed; anything else around the value makes it invalid. */
export const trimHeaderSpace = (value: string) => value.replace(/^[ \t]+|[ \t]+$/g, '')

/**
 * `Retry-After` in its delta-seconds form only (whole seconds) — the form the voice provider sends (voice-api.md →
 * Rate limits); undefined for anything else ("-1", "1.5", "1e3", a date), never a negative or fractional wait.
 */
export function retryAfterSeconds(value: string | null | undefined): number | undefined {
  if (value === null || value === undefined) return undefined
  const trimmed = trimHeaderSpace(value)
  return /^\d+$/.test(trimmed) ? Number(trimmed) : undefined
}
