/**
 * Calendar days in an IANA time zone, via Intl only. A day is [start, end) in epoch ms, where start is the
 * first instant whose local date is that day; days around a DST change are 23 or 25 hours long, and a day
 * whose midnight is skipped starts at the transition.
 */

import { printable } from '../utils/printable.ts'
import { misreadZone } from '../campaigns/zone-abbreviations.ts'
import { localParts, zoneFormatter } from '../utils/time-zone.ts'
import { utcMs } from '../utils/utc-ms.ts'

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/

export interface DayRange {
  date: string
  timezone: string
  startMs: number
  endMs: number
}

/** Throws a one-line error unless `timezone` is an IANA zone this runtime knows. */
export function assertTimeZone(timezone: string): void {
  try {
    zoneFormatter(timezone)
  } catch {
    // Shown escaped: `--timezone` is typed by a person, and a line break in it wrote a second line into the error.
    throw new Error(`unknown time zone "${printable(timezone, 60)}" (use an IANA name such as Asia/Kolkata)`)
  }
  // Intl takes EST as UTC−5 all year: a report's day in New York would begin an hour off all summer.
  const misread = misreadZone(timezone)
  if (misread) throw new Error(`time zone "${printable(timezone, 60)}" ${misread}`)
}

/** The offset of local time from UTC at an instant, in ms (Asia/Kolkata: +5h30). */
export function offsetMs(ms: number, timezone: string): number {
  const p = localParts(ms, timezone)
  const asUtc = utcMs(p.year, p.month - 1, p.day, p.hour, p.minute, p.second)
  return asUtc - (ms - (((ms % 1000) + 1000) % 1000))
}

/** YYYY-MM-DD of an instant in a time zone. */
export function localDate(ms: number, timezone: string): string {
  const p = localParts(ms, timezone)
  return `${String(p.year).padStart(4, '0')}-${String(p.month).padStart(2, '0')}-${String(p.day).padStart(2, '0')}`
}

export function parseDate(date: string): { year: number; month: number; day: number } {
  const m = DATE_RE.exec(date)
  if (!m) throw new Error(`date must be YYYY-MM-DD (got "${date}")`)
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])]
  const check = new Date(utcMs(year, month - 1, day))
  if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day) {
    throw new Error(`date must be a real calendar day (got "${date}")`)
  }
  return { year, month, day }
}

/** The calendar date `days` after (or before, if negative) `date`. */
export function addDays(date: string, days: number): string {
  const { year, month, day } = parseDate(date)
  return new Date(utcMs(year, month - 1, day + days)).toISOString().slice(0, 10)
}

function startOfDay(date: string, timezone: string): number {
  const { year, month, day } = parseDate(date)
  const base = utcMs(year, month - 1, day)
  // The offsets in force around that midnight (two of them on a DST day).
  const offsets = new Set([offsetMs(base - 14 * 3_600_000, timezone), offsetMs(base, timezone), offsetMs(base + 14 * 3_600_000, timezone)])
  const candidates = [...offsets].map((o) => base - o).sort((a, b) => a - b)
  for (const t of candidates) {
    if (localDate(t, timezone) === date && localDate(t - 1, timezone) !== date) return t
  }
  // Not reachable for real zones; keep a sane answer rather than throwing.
  return candidates.find((t) => localDate(t, timezone) === date) ?? base
}

/** The day `date` in `timezone` as [startMs, endMs). */
export function dayRange(date: string, timezone: string): DayRange {
  assertTimeZone(timezone)
  return { date, timezone, startMs: startOfDay(date, timezone), endMs: startOfDay(addDays(date, 1), timezone) }
}

/**
 * Throws unless `date` is a day a report can cover: a real calendar day in the years 0001–9998, so the day after it and
 * the week before it (the trend) are four-digit years too. `--date 9999-12-31` was taken, then failed on a day the
 * user never typed ("+010000-01").
 */
export function assertReportableDate(date: string): void {
  const { year } = parseDate(date)
  if (year < 1 || year > 9998) throw new Error(`date must be from 0001-01-01 to 9998-12-31 (got "${date}")`)
}

/** `value` when it is a day a report can cover in `timezone` (assertReportableDate), else undefined. */
export function reportableDay(value: string | null | undefined, timezone: string): string | undefined {
  if (!value) return undefined
  try {
    assertReportableDate(value)
    dayRange(value, timezone)
    return value
  } catch {
    return undefined
  }
}

/** Yesterday's date in `timezone`, as seen at `nowMs`. */
export function yesterday(nowMs: number, timezone: string): string {
  return addDays(localDate(nowMs, timezone), -1)
}

const DAY_MS = 86_400_000
/** 00…59, so a time of day is three lookups rather than three padStarts. */
const TWO_DIGITS = Array.from({ length: 60 }, (_, i) => String(i).padStart(2, '0'))
/** Years 0000–9999: where ISO 8601's basic form (and the date prefix cache below) applies. */
const ISO_MIN_MS = Date.parse('0000-01-01T00:00:00Z')
const ISO_MAX_MS = Date.parse('+010000-01-01T00:00:00Z')

/**
 * Formats instants as ISO 8601 with the zone's offset (2026-11-20T23:59:30+05:30). Offsets change only on
 * quarter hours and dates once a day, so both are cached (Intl and Date#toISOString are slow for 100,000
 * rows): per instant, what is left is arithmetic on the time of day.
 */
export function createLocalTimeFormatter(timezone: string): (ms: number | null) => string {
  const offsets = new Map<number, number>()
  const suffixes = new Map<number, string>()
  const dates = new Map<number, string>()
  return (ms) => {
    if (ms === null || !Number.isFinite(ms)) return ''
    const bucket = Math.floor(ms / 900_000)
    let off = offsets.get(bucket)
    if (off === undefined) {
      off = offsetMs(ms, timezone)
      offsets.set(bucket, off)
    }
    let suffix = suffixes.get(off)
    if (suffix === undefined) {
      const abs = Math.abs(off) / 60_000
      suffix = `${off < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`
      suffixes.set(off, suffix)
    }
    const local = ms + off
    if (local < ISO_MIN_MS || local >= ISO_MAX_MS) return `${new Date(local).toISOString().slice(0, 19)}${suffix}`
    const day = Math.floor(local / DAY_MS)
    let date = dates.get(day)
    if (date === undefined) {
      date = new Date(day * DAY_MS).toISOString().slice(0, 11)
      dates.set(day, date)
    }
    const seconds = Math.floor((local - day * DAY_MS) / 1000)
    return `${date}${TWO_DIGITS[Math.floor(seconds / 3600)]}:${TWO_DIGITS[Math.floor(seconds / 60) % 60]}:${TWO_DIGITS[seconds % 60]}${suffix}`
  }
}
