import { writeFile } from 'node:fs/promises'
import { stringify } from 'csv-stringify/sync'
import { neutraliseCell } from '../reports/neutralise.ts'

/** A contact row left out of a batch or a call, with where it was and why. */
export interface Reject {
  /** Line number in the source CSV (header = 1), or the 1-based position in a list given in code. */
  row: number
  /** The phone cell as written. */
  raw: string
  reason: string
}

/**
 * Rejected rows as CSV text (row, raw, reason), safe to open in a spreadsheet. Rejects are read by people,
 * usually in one: each cell is neutralised exactly as the reports' CSV is, so a cell that a spreadsheet
 * would run as a formula (full-width forms included) is written as text.
 */
export function rejectsCsv(rejects: Reject[]): string {
  return stringify(
    rejects.map((r) => [String(r.row), neutraliseCell(r.raw), neutraliseCell(r.reason)]),
    { header: true, columns: ['row', 'raw', 'reason'] },
  )
}

/** Writes rejected rows as a CSV file (see `rejectsCsv`). */
export async function writeRejectsCsv(path: string, rejects: Reject[]): Promise<void> {
  await writeFile(path, rejectsCsv(rejects))
}
