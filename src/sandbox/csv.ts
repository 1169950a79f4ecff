import { parse } from 'csv-parse/sync'
import { invalid } from './errors.ts'

/** Limits the spec leaves "not shown"; documented in the README's Sandbox fidelity section. */
export const MAX_CSV_BYTES = 5 * 1024 * 1024
export const MAX_CSV_ROWS = 10_000

const NOT_CSV_TYPES = /^(image|audio|video|font)\/|^application\/(pdf|zip|gzip|x-tar|vnd\.openxmlformats|msword|x-7z)/i

/**
 * Parses a batch upload. Every column becomes a call parameter (customer_phone is the destination);
 * no customer_phone column, an empty file, a binary or otherwise non-CSV upload answer 400.
 */
export async function readBatchCsv(file: File): Promise<Array<Record<string, string>>> {
  if (NOT_CSV_TYPES.test(file.type)) throw invalid(`file must be a CSV (got ${file.type})`)
  if (file.size === 0) throw invalid('file is empty')
  if (file.size > MAX_CSV_BYTES) throw invalid(`file is larger than ${MAX_CSV_BYTES / 1024 / 1024} MB`)
  const bytes = new Uint8Array(await file.arrayBuffer())
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes)
  } catch {
    throw invalid('file must be a CSV text file (UTF-8)')
  }
  if (text.includes('\u0000')) throw invalid('file must be a CSV text file, not binary data')
  if (!text.trim()) throw invalid('file is empty')
  let parsed: Array<{ record: string[]; info: { lines: number } }>
  try {
    // csv-parse's types do not model `info: true` (each record with its info).
    parsed = parse(text, { skip_empty_lines: true, trim: true, relax_column_count: false, info: true }) as unknown as Array<{ record: string[]; info: { lines: number } }>
  } catch (error) {
    throw invalid(`file is not a valid CSV: ${(error as Error).message}`)
  }
  const records = parsed.map((p) => p.record)
  // Each record's line as a spreadsheet shows it (where the record ends), as the proxy's do-not-call refusal names rows:
  // counted by position, a blank line or a quoted cell over two lines made "row 3" the file's fourth line. The parser
  // counts a \r\n inside a quoted cell as two lines; an editor, one.
  let surplus = 0
  const lines = parsed.map(({ record, info }) => {
    for (const cell of record) surplus += cell.split('\r\n').length - 1
    return info.lines - surplus
  })
  const header = records[0] ?? []
  if (!header.includes('customer_phone')) throw invalid('file must contain a customer_phone column')
  if (header.some((h) => h === '')) throw invalid('file has an empty column name in its header row')
  const duplicate = header.find((h, i) => header.indexOf(h) !== i)
  if (duplicate) throw invalid(`file has the column "${duplicate}" twice`)
  const rows = records.slice(1)
  if (rows.length === 0) throw invalid('file has no rows after the header')
  if (rows.length > MAX_CSV_ROWS) throw invalid(`file has ${rows.length} rows; at most ${MAX_CSV_ROWS} are allowed`)
  return rows.map((cells, i) => {
    const row: Record<string, string> = {}
    header.forEach((name, c) => (row[name] = cells[c] ?? ''))
    if (!row.customer_phone) throw invalid(`row ${lines[i + 1]} has no customer_phone`)
    return row
  })
}
