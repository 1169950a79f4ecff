/**
 * Wall-clock time in an IANA time zone, via Intl only (no hand-rolled offsets, so DST follows the rules
 * Node ships). Formatters are cached per zone: creating one costs far more than using it.
 */
const formatters = new Map<string, Intl.DateTimeFormat>()

/** The cached formatter of a zone; throws a RangeError for a zone this runtime does not know. */
export function zoneFormatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    })
    formatters.set(timeZone, f)
  }
  return f
}

export interface LocalParts {
  year: number
  month: number
  day: number
  hour: number
  minute: number
  second: number
}

/** Local wall-clock fields of an instant (epoch ms) in a time zone. */
export function localParts(ms: number, timeZone: string): LocalParts {
  const parts: Record<string, number> = {}
  for (const p of zoneFormatter(timeZone).formatToParts(ms)) if (p.type !== 'literal') parts[p.type] = Number(p.value)
  return { year: parts.year!, month: parts.month!, day: parts.day!, hour: parts.hour!, minute: parts.minute!, second: parts.second! }
}
