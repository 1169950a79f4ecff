import { printable } from '../utils/printable.ts'
import { PHONE_COLUMN } from './read-contacts.ts'

/**
 * The longest cell a batch row may pass to a call. Every parameter comes back in the call's webhooks, and
 * switchboard's receiver refuses a body over 1 MB (413): a 1 MB cell was called, and its outcome came back only
 * through reconciliation. The provider's spec sets no limit; 10,000 characters (at most 40 kB of UTF-8) is far
 * beyond a name, a note or an address, and leaves room for many columns and the transcript.
 */
export const MAX_CELL_CHARS = 10_000

/** Why a row cannot go out (its first cell over MAX_CELL_CHARS, by column), or undefined. The phone is checked as a phone. */
export function oversizedCell(row: Readonly<Record<string, string>>): string | undefined {
  for (const column of Object.keys(row)) {
    if (column === PHONE_COLUMN) continue
    const length = row[column]!.length
    if (length > MAX_CELL_CHARS) {
      return `the "${printable(column, 60)}" cell holds ${length} characters; at most ${MAX_CELL_CHARS} go to a call (the call's webhooks carry every parameter back)`
    }
  }
  return undefined
}
