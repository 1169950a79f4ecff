import { createWriteStream } from 'node:fs'
import { once } from 'node:events'
import { stringify as stringifySync } from 'csv-stringify/sync'
import { stringify } from 'csv-stringify'
import { PHONE_COLUMN } from './read-contacts.ts'

/**
 * The batch CSV the provider takes: `customer_phone` first, then every other column, whose header becomes
 * the call parameter's name. Columns are the union over the rows in first-seen order; a row without a
 * column gets an empty cell.
 */
export type BatchRow = Record<string, string>

export function batchColumns(rows: Iterable<BatchRow>): string[] {
  const columns = new Set<string>([PHONE_COLUMN])
  for (const row of rows) for (const key of Object.keys(row)) columns.add(key)
  return [...columns]
}

function ordered(columns: string[]): string[] {
  return [PHONE_COLUMN, ...columns.filter((c) => c !== PHONE_COLUMN)]
}

function toRecord(row: BatchRow, columns: string[]): string[] {
  return columns.map((c) => row[c] ?? '')
}

/** The whole CSV as text (what gets uploaded). */
export function batchCsv(rows: BatchRow[], columns: string[] = batchColumns(rows)): string {
  const cols = ordered(columns)
  return stringifySync(
    rows.map((r) => toRecord(r, cols)),
    { header: true, columns: cols },
  )
}

/** Streams rows to a file without building the text in memory. */
export async function writeBatchCsv(path: string, rows: Iterable<BatchRow> | AsyncIterable<BatchRow>, columns: string[]): Promise<number> {
  const cols = ordered(columns)
  const out = createWriteStream(path)
  const stringifier = stringify({ header: true, columns: cols })
  stringifier.pipe(out)
  let count = 0
  for await (const row of rows) {
    if (!stringifier.write(toRecord(row, cols))) await once(stringifier, 'drain')
    count++
  }
  stringifier.end()
  await once(out, 'finish')
  return count
}
