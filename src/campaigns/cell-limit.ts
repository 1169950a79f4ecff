import { printable } from '../utils/printable.ts'
import { PHONE_COLUMN } from './read-contacts.ts'

/**
 * The longest cell a batch row may pass to a call. Every parameter comes back in the call's webhooks, and
 * switchboard's receiver refuses a body over 1 MB (413): a 1 MB cell was called, and its outcome came back only
 * through reconciliation. The provider's spec sets no limit; 10,000 characters (at most 40 kB of UTF-8) is far
 * beyond a name, a note or an address, and leaves room for many columns and the transcript.
 */
export const MAX_CELL_CHARS = 10_000
/**
 * The most characters a row's parameters may hold together (names and values): a row of 200 columns under the cell
 * limit made a webhook of 2 MB all the same. 100,000 characters (at most 400 kB of UTF-8) leaves the rest of the
 * receiver's 1 MB to the event and the transcript.
 */
export const MAX_ROW_CHARS = 100_000

/**
 * Why a row cannot go out — its first cell over MAX_CELL_CHARS, by column, or all its parameters together over
 * MAX_ROW_CHARS — or undefined. The phone is checked as a phone.
 */
export function oversizedCell(row: Readonly<Record<string, string>>): string | undefined {
  let total = 0
  for (const column of Object.keys(row)) {
    if (column === PHONE_COLUMN) continue
    const length = row[column]!.length
    if (length > MAX_CELL_CHARS) {
      return `the "${printable(column, 60)}" cell holds ${length} characters; at most ${MAX_CELL_CHARS} go to a call (the call's webhooks carry every parameter back)`
    }
    total += column.length + length
  }
  if (total > MAX_ROW_CHARS) {
    return `the row's columns hold ${total} characters together (names and values); at most ${MAX_ROW_CHARS} go to a call (the call's webhooks carry every parameter back)`
  }
  return undefined
}
