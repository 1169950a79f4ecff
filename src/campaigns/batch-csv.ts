import { createWriteStream } from 'node:fs'
import { once } from 'node:events'
import { stringify as stringifySync } from 'csv-stringify/sync'
import { ownValue } from './own-field.ts'
import { PHONE_COLUMN } from './read-contacts.ts'

/**
 * The batch CSV the provider takes: `customer_phone` first, then every other column, whose header becomes
 * the call parameter's name. Columns are the union over the rows in first-seen order; a row without a
 * column gets an empty cell.
 */
export type BatchRow = Record<string, string>

/** Column order for a batch CSV: customer_phone, then the other keys in first-seen order. */
export function batchColumns(rows: Iterable<BatchRow>): string[] {
  const columns = new Set<string>([PHONE_COLUMN])
  for (const row of rows) for (const key of Object.keys(row)) columns.add(key)
  return [...columns]
}

function ordered(columns: string[]): string[] {
  return [PHONE_COLUMN, ...columns.filter((c) => c !== PHONE_COLUMN)]
}

function toRecord(row: BatchRow, columns: string[]): string[] {
  // Own cells only: a row without a `constructor` column must not upload the inherited function's text.
  return columns.map((c) => ownValue(row, c) ?? '')
}

/** The whole CSV as text (what gets uploaded). */
export function batchCsv(rows: BatchRow[], columns: string[] = batchColumns(rows)): string {
  const cols = ordered(columns)
  return stringifySync(
    rows.map((r) => toRecord(r, cols)),
    { header: true, columns: cols },
  )
}

/** Rows stringified per write: large enough to amortise the stream machinery, small enough to keep memory flat. */
const ROWS_PER_WRITE = 2000

/**
 * Streams rows to a file without building the whole text in memory. Rows go out in slices of
 * ROWS_PER_WRITE through csv-stringify's sync form, the same bytes as one stringifier stream: a write per
 * row through a stream (and an await per row of a plain array) cost more than the CSV encoding itself.
 */
export async function writeBatchCsv(path: string, rows: Iterable<BatchRow> | AsyncIterable<BatchRow>, columns: string[]): Promise<number> {
  const cols = ordered(columns)
  // Contacts' numbers and names: the user's alone (0600), as the data folder's other files.
  const out = createWriteStream(path, { mode: 0o600 })
  let header = true
  let slice: string[][] = []
  let count = 0
  const flush = async () => {
    const text = stringifySync(slice, { header, columns: cols })
    header = false
    slice = []
    if (!out.write(text)) await once(out, 'drain')
  }
  /** Whether the slice is full (then the caller awaits `flush`: no promise per row for a plain array). */
  const add = (row: BatchRow): boolean => {
    slice.push(toRecord(row, cols))
    count++
    return slice.length >= ROWS_PER_WRITE
  }
  try {
    if (Symbol.asyncIterator in rows) {
      for await (const row of rows) if (add(row)) await flush()
    } else {
      for (const row of rows) if (add(row)) await flush()
    }
    // The last slice, or the header alone for no rows.
    if (slice.length || header) await flush()
  } catch (error) {
    out.destroy()
    throw error
  }
  out.end()
  await once(out, 'finish')
  return count
}
