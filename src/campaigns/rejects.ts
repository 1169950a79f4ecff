import { writeFile } from 'node:fs/promises'
import { stringify } from 'csv-stringify/sync'

/** A contact row left out of a batch or a call, with where it was and why. */
export interface Reject {
  /** Line number in the source CSV (header = 1), or the 1-based position in a list given in code. */
  row: number
  /** The phone cell as written. */
  raw: string
  reason: string
}

/**
 * Rejects are read by people, usually in a spreadsheet: a cell starting with = + - @ (or a tab/CR)
 * would run as a formula there, so it is written as text with a leading apostrophe.
 */
function spreadsheetSafe(value: string): string {
  return /^[=+\-@\t\r]/.test(value) ? `'${value}` : value
}

/** Rejected rows as CSV text (row, raw, reason), safe to open in a spreadsheet. */
export function rejectsCsv(rejects: Reject[]): string {
  return stringify(
    rejects.map((r) => [String(r.row), spreadsheetSafe(r.raw), spreadsheetSafe(r.reason)]),
    { header: true, columns: ['row', 'raw', 'reason'] },
  )
}

/** Writes rejected rows as a CSV file (see `rejectsCsv`). */
export async function writeRejectsCsv(path: string, rejects: Reject[]): Promise<void> {
  await writeFile(path, rejectsCsv(rejects))
}
