import { headerKey } from './read-contacts.ts'

/** A contact's own time-zone column, as a CSV header or call parameter may spell it: any case, `time_zone`, `tz`. */
const NAMES = new Set(['timezone', 'time_zone', 'tz'])

/** Whether a column or parameter name is the time-zone column ("Timezone", "TimeZone", "time zone", "TZ", …). */
export function isTimeZoneColumn(name: string): boolean {
  // Only names of a length a spelling can have go through headerKey (follow-up planning calls this per row).
  const length = name.trim().length
  return (length === 2 || length === 8 || length === 9) && NAMES.has(headerKey(name))
}

/**
 * The value of a record's time-zone column, whatever its spelling (`timezone` itself first). It was read as
 * `timezone` only: a list with "Timezone" or "TimeZone" was called in the recipe's zone — at night, for a US number
 * in an Indian recipe's morning.
 */
export function timeZoneColumnOf(fields: Readonly<Record<string, string | undefined>>): string | undefined {
  const exact = fields.timezone
  if (exact !== undefined) return exact
  for (const name in fields) if (isTimeZoneColumn(name)) return fields[name]
  return undefined
}
