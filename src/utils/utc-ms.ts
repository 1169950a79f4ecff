/**
 * `Date.UTC` for every year. `Date.UTC` itself reads a year of 0–99 as 1900–1999, so the day 0100-01-01 minus a week
 * came out in 1999 and a page asking for it failed; a `Date`'s own setters take the year as given.
 */
export function utcMs(year: number, monthIndex: number, day = 1, hour = 0, minute = 0, second = 0, ms = 0): number {
  const date = new Date(0)
  date.setUTCFullYear(year, monthIndex, day)
  date.setUTCHours(hour, minute, second, ms)
  return date.getTime()
}
