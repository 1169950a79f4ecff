/**
 * `X-RateLimit-Reset`, read strictly: an ISO 8601 timestamp with a date, a time and an offset — the spec's form,
 * `2026-03-18T20:54:00+00:00` (`Z`, `+0530` and fractions of a second too). Anything else is no reset at all, as
 * src/utils/retry-after.ts reads Retry-After: V8's `Date.parse` takes "60" as 1960, "1.5" or "-1" as dates in 2001
 * (a wait of 0, so a 429 is asked again at once) and "9999" as the year 9999 (a tenant held back for ever).
 */
const ISO_WITH_OFFSET = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(?:(Z)|([+-])(\d{2}):?(\d{2}))$/i

/** Milliseconds since the epoch, or undefined for a value that is not such a timestamp (or names 31 Feb, 25:00). */
export function rateLimitResetMs(value: string | null | undefined): number | undefined {
  const m = value ? ISO_WITH_OFFSET.exec(value.trim()) : null
  if (!m) return undefined
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [number, number, number, number, number]
  const second = m[6] === undefined ? 0 : Number(m[6])
  const fraction = m[7] === undefined ? 0 : Math.floor(Number(m[7]) * 1000)
  if (hour > 23 || minute > 59 || second > 60) return undefined
  const offsetHours = m[8] ? 0 : Number(m[10])
  const offsetMinutes = m[8] ? 0 : Number(m[11])
  if (offsetHours > 23 || offsetMinutes > 59) return undefined
  const local = Date.UTC(year, month - 1, day, hour, minute, second, fraction)
  const date = new Date(Date.UTC(year, month - 1, day))
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return undefined
  const offsetMs = (m[9] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000
  return local - offsetMs
}
