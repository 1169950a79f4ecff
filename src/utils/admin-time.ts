import { HTTPError } from 'h3'
import { parseDayOrInstant } from './iso-datetime.ts'

/**
 * An admin route's `since`/`until`, as the CLI's `--since`/`--until`: a day (its UTC midnight) or a time with its zone,
 * never "March 7" read as 2001. Undefined when absent; a 400 naming the field when it is anything else.
 */
export function adminTime(value: unknown, name: string): number | undefined {
  if (value === undefined || value === null || value === '') return undefined
  const ms = typeof value === 'string' ? parseDayOrInstant(value) : undefined
  if (ms === undefined) throw new HTTPError({ status: 400, message: `${name} must be an ISO day (its UTC midnight) or a time with its zone, such as 2026-03-01 or 2026-03-01T00:00:00Z` })
  return ms
}
