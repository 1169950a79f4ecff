import { getTimezonesForCountry } from 'countries-and-timezones'
import { countryOfPhone } from './phones.ts'
import { northAmericanZone } from './zone-abbreviations.ts'
import { localParts, type LocalParts } from '../utils/time-zone.ts'

/**
 * Calling windows in the RECIPIENT's local time. All local-time arithmetic goes through Intl (the IANA
 * database Node ships), so daylight-saving changes are handled by the same rules the recipient's phone
 * uses — no offsets are written down here.
 */
export interface CallingWindow {
  /** Local opening time, "HH:MM" (inclusive). Default 09:00. */
  start: string
  /** Local closing time, "HH:MM" (exclusive: a call is not started at 21:00). Default 21:00. */
  end: string
}

/** The default calling hours: 09:00–21:00 in the recipient's local time. */
/**
 * 09:00–21:00, frozen: recipes get it as `ctx.campaigns.DEFAULT_WINDOW`, and one that set `DEFAULT_WINDOW.end = '23:59'`
 * — even in a dry run — changed the window of every call and batch of every recipe in the process.
 */
export const DEFAULT_WINDOW: Readonly<CallingWindow> = Object.freeze({ start: '09:00', end: '21:00' })

function parseMinutes(hhmm: string): number {
  const match = /^(\d{1,2}):(\d{2})$/.exec(hhmm.trim())
  if (!match) throw new Error(`calling window times look like "09:00" (got "${hhmm}")`)
  const minutes = Number(match[1]) * 60 + Number(match[2])
  if (minutes > 24 * 60 || Number(match[2]) > 59) throw new Error(`"${hhmm}" is not a time of day`)
  return minutes
}

// Windows are a handful of strings, asked about once per follow-up planned: each is read once.
const minutesByTime = new Map<string, number>()

function minutesOf(hhmm: string): number {
  let minutes = minutesByTime.get(hhmm)
  if (minutes === undefined) {
    minutes = parseMinutes(hhmm)
    if (minutesByTime.size >= 1_000) minutesByTime.clear()
    minutesByTime.set(hhmm, minutes)
  }
  return minutes
}

// Verdicts by zone name: building an Intl.DateTimeFormat to ask costs more than a follow-up plan's own work.
const zoneVerdicts = new Map<string, boolean>()

/** Whether a string names an IANA time zone this Node knows (e.g. "Asia/Kolkata"). */
export function isValidTimeZone(tz: string | null | undefined): tz is string {
  if (!tz) return false
  const known = zoneVerdicts.get(tz)
  if (known !== undefined) return known
  let valid: boolean
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz })
    valid = true
  } catch {
    valid = false
  }
  // Bounded: zone names come from data (a contact's column), so junk must not grow this forever.
  if (zoneVerdicts.size < 1_000) zoneVerdicts.set(tz, valid)
  return valid
}

type LocalTime = LocalParts

function intlLocalTime(at: number, timeZone: string): LocalTime {
  return localParts(at, timeZone)
}

// Intl is slow (a formatToParts per question) and planning 100,000 follow-ups asks it the same questions
// again and again. So the zone's offset, as Intl reports it, is memoized per 15-minute slot: UTC offsets
// and transition instants in the IANA database fall on quarter hours, so a slot never straddles one.
const SLOT = 15 * 60_000
const offsets = new Map<string, Map<number, number>>()

/** The zone's offset from UTC at instant `at`, in ms, as Intl reports it. */
function offsetAt(at: number, timeZone: string): number {
  let zone = offsets.get(timeZone)
  if (!zone) offsets.set(timeZone, (zone = new Map()))
  const slot = Math.floor(at / SLOT)
  let offset = zone.get(slot)
  if (offset === undefined) {
    const probe = slot * SLOT
    const l = intlLocalTime(probe, timeZone)
    offset = Date.UTC(l.year, l.month - 1, l.day, l.hour, l.minute, l.second) - probe
    if (zone.size > 100_000) zone.clear()
    zone.set(slot, offset)
  }
  return offset
}

/** Wall-clock time in `timeZone` at instant `at`. */
export function localTime(at: number, timeZone: string): LocalTime {
  const d = new Date(at + offsetAt(at, timeZone))
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate(), hour: d.getUTCHours(), minute: d.getUTCMinutes(), second: d.getUTCSeconds() }
}

/** The instant wall-clock time `wall` (read as UTC) shows under `offset`, or NaN when the zone keeps another then. */
function occursAt(wall: number, offset: number, timeZone: string): number {
  const at = wall - offset
  return offsetAt(at, timeZone) === offset ? at : NaN
}

/** The earlier of two instants, NaN standing for none. */
function earlier(best: number, at: number): number {
  return at < best || Number.isNaN(best) ? at : best
}

/**
 * The instant a local wall-clock time occurs in `timeZone`. A time skipped by a DST jump resolves to the
 * first instant after the gap (the wall clock reads later than asked); a repeated hour picks the first — or, given
 * `notBefore`, the first that is not before it (01:30 on a fall-back night asked at the second 01:00 is the second 01:30).
 */
export function zonedTimeToEpoch(date: { year: number; month: number; day: number }, minutes: number, timeZone: string, notBefore = -Infinity): number {
  const wall = Date.UTC(date.year, date.month - 1, date.day, 0, minutes)
  // Two candidate offsets: the one before and the one after any transition near this wall time (the one at the wall
  // time itself lies between them). Without arrays or sets: this runs for every follow-up planned.
  const a = offsetAt(wall - 86_400_000, timeZone)
  const b = offsetAt(wall, timeZone)
  const c = offsetAt(wall + 86_400_000, timeZone)
  const x = occursAt(wall, a, timeZone)
  const y = b === a ? NaN : occursAt(wall, b, timeZone)
  const z = c === a || c === b ? NaN : occursAt(wall, c, timeZone)
  const first = earlier(earlier(x, y), z)
  if (!Number.isNaN(first)) {
    const firstLater = earlier(earlier(x >= notBefore ? x : NaN, y >= notBefore ? y : NaN), z >= notBefore ? z : NaN)
    return Number.isNaN(firstLater) ? first : firstLater
  }
  const candidates = [a, b, c]
  // In a gap: the wall time never shows. The transition lies between the instant the earlier offset gives (which
  // reads before the gap) and the one the later gives (which reads after it), on a quarter hour as every transition.
  const before = wall - Math.max(...candidates)
  const after = wall - Math.min(...candidates)
  const offsetBefore = offsetAt(before, timeZone)
  for (let t = Math.floor(before / SLOT) * SLOT + SLOT; t < after; t += SLOT) if (offsetAt(t, timeZone) !== offsetBefore) return t
  return after
}

function addDays(date: { year: number; month: number; day: number }, days: number) {
  const d = new Date(Date.UTC(date.year, date.month - 1, date.day + days))
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() }
}

/** How many minutes a window is open each day. */
export function windowMinutes(window: CallingWindow): number {
  return minutesOf(window.end) - minutesOf(window.start)
}

/** Whether instant `at` (epoch ms) falls inside the calling window in `timeZone`. */
export function isWithinWindow(at: number, timeZone: string, window: CallingWindow = DEFAULT_WINDOW): boolean {
  const l = localTime(at, timeZone)
  const m = l.hour * 60 + l.minute
  return m >= minutesOf(window.start) && m < minutesOf(window.end)
}

/** `at` itself when it is inside the window, else the next opening (today's or tomorrow's) in `timeZone`. */
export function nextCallingTime(at: number, timeZone: string, window: CallingWindow = DEFAULT_WINDOW): number {
  const start = minutesOf(window.start)
  const end = minutesOf(window.end)
  if (end <= start) throw new Error(`calling window ends (${window.end}) before it starts (${window.start})`)
  const l = localTime(at, timeZone)
  const m = l.hour * 60 + l.minute
  if (m >= start && m < end) return at
  const today = { year: l.year, month: l.month, day: l.day }
  // The first opening, today's or a later day's, that is not before `at` and is inside the window: on a DST night
  // the day's opening may fall in the repeated hour (its first occurrence behind us, its second still to come — also
  // after the window's first close) or in the skipped one (the first instant after the gap may be past a short
  // window's close).
  for (let day = 0; day < 4; day++) {
    const opening = zonedTimeToEpoch(addDays(today, day), start, timeZone, at)
    if (opening >= at && isWithinWindow(opening, timeZone, window)) return reopenedEarlier(at, opening, timeZone, window)
  }
  return zonedTimeToEpoch(addDays(today, m < start ? 0 : 1), start, timeZone, at)
}

/**
 * A clock turned back can re-enter a window past its start (Chatham's falls from 03:45 to 02:45, inside a window open
 * until 03:00): between `at` and the next opening, the first quarter hour — transitions fall on them — found inside
 * the window, if the offset changes at all; else the opening.
 */
function reopenedEarlier(at: number, opening: number, timeZone: string, window: CallingWindow): number {
  if (offsetAt(at, timeZone) === offsetAt(opening, timeZone)) return opening
  for (let t = Math.floor(at / SLOT) * SLOT + SLOT; t < opening; t += SLOT) if (isWithinWindow(t, timeZone, window)) return t
  return opening
}

const countryZones = new Map<string, string | undefined>()

/**
 * Countries with several zones of which one keeps the time of nearly everyone (outlying islands, a sparse region): a
 * number of theirs with no `timezone` column is called in that zone rather than the recipe's — a Madrid mobile was
 * rung at 04:30 by an Indian recipe's morning because the Canaries keep another hour. Countries split in earnest (US,
 * CA, MX, BR, AU, RU, ID, CD…) are not here: their numbers need the column, or take the recipe's zone.
 */
const MAIN_ZONE: Readonly<Record<string, string>> = {
  CN: 'Asia/Shanghai', ES: 'Europe/Madrid', PT: 'Europe/Lisbon', NZ: 'Pacific/Auckland', EC: 'America/Guayaquil',
  CL: 'America/Santiago', UA: 'Europe/Kyiv', PG: 'Pacific/Port_Moresby', MN: 'Asia/Ulaanbaatar', GL: 'America/Nuuk',
}

/**
 * The single time zone of a country, or undefined when it has several that differ (US, AU, BR…). Zones
 * with identical offsets count as one (Germany's list carries Büsingen's Europe/Zurich, which keeps
 * German time).
 */
export function countryTimeZone(country: string | undefined): string | undefined {
  if (!country) return undefined
  if (countryZones.has(country)) return countryZones.get(country)
  const zones = (getTimezonesForCountry(country) ?? []).filter((z) => !z.deprecated)
  let zone: string | undefined
  const first = zones[0]
  if (first && zones.every((z) => z.utcOffset === first.utcOffset && z.dstOffset === first.dstOffset)) zone = first.name
  countryZones.set(country, zone)
  return zone
}

/**
 * The recipient's time zone: the number's country when that country has one zone, else the contact's
 * `timezone` column when it names a valid zone (for a US or Canadian number, `EST`, `PT`, `Eastern`… as the zone they
 * mean), else the zone nearly all of the country keeps (MAIN_ZONE: Spain's, not the Canaries'), else the fallback
 * (the recipe's).
 */
export function timeZoneForPhone(
  e164: string,
  options: { column?: string | null; fallback: string; country?: string | undefined },
): string {
  return resolveTimeZone(e164, options).zone
}

/**
 * A zone given for a recipient (a call's `timeZone`): a North American abbreviation is the zone with the daylight
 * saving its writer meant for a US or Canadian number (`EST` is New York), as a CSV's timezone column is read; for any
 * other number Intl's own reading stands (`EST` for a Panama number is UTC−5 all year, which is right there), and a
 * name Intl does not know (`Eastern`) is the zone it names.
 */
export function givenTimeZone(zone: string, country: string | undefined): string {
  const meant = northAmericanZone(zone)
  return meant && (country === 'US' || country === 'CA' || !isValidTimeZone(zone)) ? meant : zone
}

/** The recipient's time zone (see `timeZoneForPhone`) and where it came from: `fallback` is a guess worth a warning. */
export function resolveTimeZone(
  e164: string,
  options: { column?: string | null; fallback: string; country?: string | undefined },
): { zone: string; from: 'country' | 'column' | 'main_zone' | 'fallback'; country: string | undefined } {
  const country = options.country ?? countryOfPhone(e164)
  const fromCountry = countryTimeZone(country)
  if (fromCountry) return { zone: fromCountry, from: 'country', country }
  const column = options.column?.trim()
  // A +1 number's "EST" means New York's time, daylight saving and all (Intl reads it as UTC−5 all year).
  const abbreviated = column && (country === 'US' || country === 'CA') ? northAmericanZone(column) : undefined
  if (abbreviated) return { zone: abbreviated, from: 'column', country }
  if (isValidTimeZone(column)) return { zone: column, from: 'column', country }
  const main = country ? MAIN_ZONE[country] : undefined
  return main ? { zone: main, from: 'main_zone', country } : { zone: options.fallback, from: 'fallback', country }
}
