/** Small formatters shared by the HTML and text renderings. */

export function fmtInt(n: number): string {
  return n.toLocaleString('en-US')
}

/** A count with its noun, singular for one: `1 call`, `2 calls` (`calls` given, `call` derived by dropping the `s`). */
export function fmtCount(n: number, plural: string): string {
  return `${fmtInt(n)} ${n === 1 ? plural.replace(/s$/, '') : plural}`
}

/**
 * A size in bytes as MB with one decimal, or KB under a megabyte (a zipped attachment of 40 KB read `0.0 MB`) — decimal
 * units, as they are labelled (and as mail relays state their limits): 6,126,933 bytes read `5.8 MB`, in mebibytes.
 */
export function fmtBytes(n: number): string {
  return n < 999_500 ? `${Math.max(1, Math.round(n / 1000))} KB` : `${(n / 1_000_000).toFixed(1)} MB`
}

export function fmtPct(n: number | null): string {
  return n === null ? '—' : `${n.toFixed(1)}%`
}

/** Under a minute once rounded to the tenth shown: 59.96 is "1 min 00 s", not "60.0 s". */
const underAMinute = (n: number) => Math.round(n * 10) < 600

/**
 * Whole minutes and seconds of a duration. The total is rounded before it is split, so a remainder that
 * rounds up carries into the minutes (119.6 → 2, 0) instead of reading 60 seconds.
 */
function minutesSeconds(n: number): { m: number; s: string } {
  const total = Math.round(n)
  return { m: Math.floor(total / 60), s: String(total % 60).padStart(2, '0') }
}

/**
 * A duration as the report writes it, everywhere — the mail's text and HTML parts (headline, agent and campaign tables,
 * the provider's batch average) and `report send`'s summary: "59.9 s" under a minute, "1 min 05 s" from one. The HTML
 * tables wrote "1:05" (which reads as a time of day, or hours), the rest "1 min 05 s": one figure, two spellings.
 */
export function fmtDuration(n: number | null): string {
  if (n === null) return '—'
  if (underAMinute(n)) return `${n.toFixed(1)} s`
  const { m, s } = minutesSeconds(n)
  return `${m} min ${s} s`
}

/** A signed change: "+12", "−3", "±0"; points for rates. */
export function fmtDelta(n: number | null, unit: '' | ' pts' = ''): string {
  if (n === null) return '—'
  if (n === 0) return `±0${unit}`
  const abs = unit ? Math.abs(n).toFixed(1) : fmtInt(Math.abs(n))
  return `${n > 0 ? '+' : '−'}${abs}${unit}`
}

export function subjectFor(date: string, timezone: string): string {
  return `switchboard daily report — ${date} (${timezone})`
}

/** The day and zone of a daily-report subject (`subjectFor`'s inverse), or undefined for other mail. */
export function reportOfSubject(subject: string): { date: string; timezone: string } | undefined {
  const match = /^switchboard daily report — (\d{4}-\d{2}-\d{2}) \(([^()]+)\)$/.exec(subject)
  return match ? { date: match[1]!, timezone: match[2]! } : undefined
}
