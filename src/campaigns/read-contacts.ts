import { createReadStream } from 'node:fs'
import { Readable } from 'node:stream'
import { CsvError, Parser } from 'csv-parse'
import { printable } from '../utils/printable.ts'
import { ownerAndMode, processUser } from '../utils/owner-and-mode.ts'
import { headerDelimiter } from './csv-delimiter.ts'
import { NotTextError, toUtf8 } from './csv-encoding.ts'
import { setOwn } from './own-field.ts'

/**
 * Contacts from a CSV, streamed (a 100,000-row file is never held as text), with the spreadsheet quirks
 * handled: a UTF-8 BOM, header aliases for the phone column, padded cells, empty lines, quoted fields
 * with commas and line breaks, rows shorter or longer than the header.
 */
export interface ContactRow {
  /** Line number in the file where the record ends (the header is line 1), as a spreadsheet shows it. */
  row: number
  /** The phone cell as written. */
  phone: string
  /** Every other column by its header (trimmed), values trimmed. */
  fields: Record<string, string>
}

export type ContactsSource = string | Readable | AsyncIterable<string | Uint8Array> | Iterable<string | Uint8Array>

export interface ReadContactsOptions {
  /** Extra header names to read as the phone column (case-insensitive; spaces, dashes and dots count as `_`). */
  phoneAliases?: string[]
  /**
   * Field delimiter. Unless given, read from the header line: `,`, or `;` (Excel's CSV where the decimal mark is a
   * comma) or a tab (Excel's "Unicode Text") when the header holds more of those than commas.
   */
  delimiter?: string
  /** Used in error messages (a path is named automatically). */
  name?: string
  /**
   * Told when the file was readable but not as written: bytes that are not UTF-8 were read as Windows-1252
   * (Latin-1). Without it such a file is still read; the caller decides whether to surface the warning.
   */
  onWarning?: (message: string) => void
}

/** The standard column the provider requires, and what spreadsheets usually call it instead. */
export const PHONE_COLUMN = 'customer_phone'
/**
 * Header names read as the phone column (compared with `headerKey`), most specific first. `contact` comes last: in
 * many lists it is the person's name ("Contact,Telephone"), and taken first it made every row a reject.
 */
export const PHONE_ALIASES = [
  'customer_phone', 'customer_phone_number', 'phone', 'phone_number', 'phone_no', 'phonenumber', 'mobile',
  'mobile_number', 'mobile_no', 'mobileno', 'cell', 'cell_phone', 'cellphone', 'contact_number', 'contact_no',
  'msisdn', 'telephone', 'tel', 'number', 'to_phone', 'to', 'contact',
]

/**
 * Why a file is no contact list: it has no phone column (or no header at all), or it could not be read through —
 * not text, a CSV its parser gives up on, gone. Rows before an unreadable part may already have been read.
 */
export type ContactsErrorKind = 'no-phone-column' | 'unreadable'

/**
 * A CSV that cannot be read as a contact list (as opposed to a bad row, which is a reject). Its message is
 * one printable line: it may quote what the file holds, and a binary file must not reach the terminal raw.
 */
export class ContactsError extends Error {
  override readonly name = 'ContactsError'
  readonly kind: ContactsErrorKind
  constructor(message: string, kind: ContactsErrorKind = 'unreadable') {
    super(printable(message, 500))
    this.kind = kind
  }
}

/**
 * A header as compared with the aliases: lower case, spaces, dashes and dots as `_`, none at either end — `Mobile No.`
 * is `mobile_no` (it was `mobile_no_`, and a list headed so had "no phone column").
 */
export function headerKey(header: string): string {
  return header.replace(/^\uFEFF/, '').trim().toLowerCase().replace(/[\s\-.]+/g, '_').replace(/^_+|_+$/g, '')
}

/** Which header index is the phone column: `customer_phone` itself first, then the aliases in order. */
export function findPhoneColumn(headers: string[], extraAliases: string[] = []): number {
  const keys = headers.map(headerKey)
  for (const alias of [...PHONE_ALIASES.slice(0, 1), ...extraAliases.map(headerKey), ...PHONE_ALIASES.slice(1)]) {
    const index = keys.indexOf(alias)
    if (index >= 0) return index
  }
  return -1
}

function toReadable(source: ContactsSource): Readable {
  if (typeof source === 'string') return createReadStream(source)
  if (source instanceof Readable) return source
  return Readable.from(source as AsyncIterable<string | Uint8Array>)
}

/** `\r\n` pairs in a cell's value: only a quoted cell holds a line break (the parser has taken off the cell's ends). */
function crlfs(cell: string): number {
  let count = 0
  for (let at = cell.indexOf('\r\n'); at !== -1; at = cell.indexOf('\r\n', at + 2)) count++
  return count
}

/** A record with the line it ends on (the parser's `info.lines` as the record is handed on). */
interface NumberedRecord {
  record: string[]
  lines: number
}

/**
 * csv-parse with each record paired with the line it ends on. The parser hands a record on (`push`) in the same
 * synchronous step that finished it, so its public `info.lines` is that record's. Its own `info: true` builds two
 * copies of all its counters for every record: half of the parser's time on a 100,000-row list.
 */
class LineNumberedParser extends Parser {
  override push(record: unknown, encoding?: BufferEncoding): boolean {
    return super.push(record === null ? null : ({ record: record as string[], lines: this.info.lines } satisfies NumberedRecord), encoding)
  }
}

/** How far the header line is looked for: header lines are a few hundred bytes. */
const HEADER_SCAN_BYTES = 64 * 1024

/**
 * The decoded text's chunks, with the delimiter its first line uses: chunks are read until a line break (or the end),
 * then handed on whole, the first ones included.
 */
async function withDelimiter(text: AsyncIterable<Buffer>): Promise<{ delimiter: string; chunks: AsyncIterable<Buffer> }> {
  const iterator = text[Symbol.asyncIterator]()
  const head: Buffer[] = []
  let size = 0
  let found = false
  // Each chunk is searched once, for the line's end (CR and LF are single bytes in UTF-8); a first line longer than
  // HEADER_SCAN_BYTES (a file that is not a CSV) is judged by its start. Joining and decoding everything read so far
  // for every chunk made a 20 MB file with no line break take half a minute.
  while (!found && size < HEADER_SCAN_BYTES) {
    const next = await iterator.next()
    if (next.done) break
    head.push(next.value)
    size += next.value.length
    // The header is the first line with something on it: blank lines before it (an export's) are skipped as the parser
    // skips them, and a file starting with one read "" as its header, so a `;` or tab file was read with commas.
    found = (next.value.includes(0x0a) || next.value.includes(0x0d)) && firstLine(Buffer.concat(head).toString('utf8')).ended
  }
  const { line } = firstLine(Buffer.concat(head).subarray(0, HEADER_SCAN_BYTES).toString('utf8'))
  async function* chunks() {
    yield* head
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value
  }
  return { delimiter: headerDelimiter(line), chunks: chunks() }
}

/** The first line of `text` that is not blank, and whether its end has been read. */
function firstLine(text: string): { line: string; ended: boolean } {
  const start = text.replace(/^(?:\uFEFF?[ \t]*(?:\r\n|\r|\n))+/, '')
  const end = start.search(/[\r\n]/)
  return end >= 0 ? { line: start.slice(0, end), ended: true } : { line: start, ended: false }
}

/** 3 → "third", 21 → "21st". */
function ordinal(n: number): string {
  const words = ['', 'first', 'second', 'third', 'fourth', 'fifth', 'sixth', 'seventh', 'eighth', 'ninth', 'tenth']
  if (n < words.length) return words[n]!
  const suffix = n % 100 >= 11 && n % 100 <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th')
  return `${n}${suffix}`
}

/** The header's names, a repeated one numbered (`note`, `note_2`): a row keyed by name would keep only the last. */
function uniqueHeaders(headers: string[], name: string, warn: ((message: string) => void) | undefined): string[] {
  const seen = new Map<string, number>()
  return headers.map((header) => {
    if (!header) return header
    const count = (seen.get(header) ?? 0) + 1
    seen.set(header, count)
    if (count === 1) return header
    let renamed = `${header}_${count}`
    while (headers.includes(renamed)) renamed += '_'
    warn?.(
      printable(
        count === 2
          ? `${name} has two columns named "${header}": the second is read as "${renamed}"`
          : `${name} has a ${ordinal(count)} column named "${header}": it is read as "${renamed}"`,
        300,
      ),
    )
    return renamed
  })
}

/** Cells a file held where its header names no column: where, and the first row's values, for one warning. */
interface Dropped {
  count: number
  /** The first few rows' numbers. */
  rows: number[]
  /** The first row's values (non-empty cells). */
  values: string[]
}

/** How many rows and values a dropped-cells warning names: enough to find them, not a copy of the file. */
const DROPPED_SHOWN = 3

function noteDropped(dropped: Dropped | undefined, row: number, values: string[]): Dropped {
  const seen = dropped ?? { count: 0, rows: [], values }
  seen.count++
  if (seen.rows.length < DROPPED_SHOWN) seen.rows.push(row)
  return seen
}

/** A value as a warning quotes it: in double quotes, escaped, cut. */
function quoted(value: string): string {
  return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)
}

/** `in 1 row (row 2: "x")`, `in 6 rows (rows 2, 3, 4 and 3 more; row 2: "x", "y")`. */
function whereDropped(d: Dropped): string {
  const shown = d.values.slice(0, DROPPED_SHOWN).map(quoted).join(', ') + (d.values.length > DROPPED_SHOWN ? ` and ${d.values.length - DROPPED_SHOWN} more` : '')
  if (d.count === 1) return `in 1 row (row ${d.rows[0]}: ${shown})`
  const listed = d.count > d.rows.length ? `${d.rows.join(', ')} and ${d.count - d.rows.length} more` : `${d.rows.slice(0, -1).join(', ')} and ${d.rows.at(-1)}`
  return `in ${d.count} rows (rows ${listed}; row ${d.rows[0]}: ${shown})`
}

/** Async iterator of the file's contact rows, in file order. Throws `ContactsError` for an unusable file. */
export async function* readContacts(source: ContactsSource, options: ReadContactsOptions = {}): AsyncGenerator<ContactRow> {
  const name = options.name ?? (typeof source === 'string' ? source : 'the CSV')
  const input = toReadable(source)
  const text = toUtf8({ name, onWarning: options.onWarning })
  // pipe() does not forward a source error (a missing file): without this the iterator would wait forever.
  input.once('error', (error) => text.destroy(error))
  let parser: LineNumberedParser | undefined
  let headers: string[] | undefined
  let phoneIndex = -1
  // csv-parse counts a line break inside a quoted cell written as \r\n as two lines; the file's editor, one. The
  // surplus so far, taken off each row number, so `row` stays the line (where the row ends) the user sees.
  let surplus = 0
  // Values no header names (cells past the header's end, a column whose header cell is empty): the row goes out
  // without them, and the file's warnings say so — they were dropped without a word.
  let beyond: Dropped | undefined
  const unnamed = new Map<number, Dropped>()
  try {
    const { delimiter, chunks } = options.delimiter ? { delimiter: options.delimiter, chunks: input.pipe(text) } : await withDelimiter(input.pipe(text))
    const source = Readable.from(chunks)
    // An error of the decoded text reaches the parser through this stream (and one after the parser is done, a
    // "premature close" as the streams are torn down, goes nowhere).
    source.once('error', (error) => parser?.destroy(error))
    parser = source.pipe(
      new LineNumberedParser({
        bom: true,
        delimiter,
        skip_empty_lines: true,
        relax_column_count: true,
        // `Bob "The Builder"` and `5'10"` are read as written: a quote inside an unquoted cell is a character, not an error.
        relax_quotes: true,
        // Also lets a quoted cell follow a space (`a, "b, c"`), as hand-edited files have.
        trim: true,
      }),
    )
    for await (const item of parser as AsyncIterable<NumberedRecord>) {
      const record = item.record
      for (const cell of record) if (cell.includes('\r')) surplus += crlfs(cell)
      // A row of empty cells (",,,") is an empty line to a spreadsheet user.
      if (record.every((cell) => cell === '')) continue
      if (!headers) {
        headers = uniqueHeaders(record.map((h) => h.replace(/^\uFEFF/, '').trim()), name, options.onWarning)
        phoneIndex = findPhoneColumn(headers, options.phoneAliases)
        if (phoneIndex < 0) {
          const found = headers.filter(Boolean).join(', ') || 'no columns'
          throw new ContactsError(
            `${name} has no phone column: name one "customer_phone" (or phone, mobile, contact_number, msisdn); found: ${found}`,
            'no-phone-column',
          )
        }
        continue
      }
      const row = item.lines - surplus
      const fields: Record<string, string> = {}
      for (let i = 0; i < headers.length; i++) {
        if (i === phoneIndex) continue
        const header = headers[i]!
        // An unnamed column carries nothing a prompt could refer to (the provider refuses an empty column name).
        if (!header) {
          if (record[i]) unnamed.set(i, noteDropped(unnamed.get(i), row, [record[i]!]))
          continue
        }
        setOwn(fields, header, record[i] ?? '')
      }
      if (record.length > headers.length) {
        const extra = record.slice(headers.length).filter((cell) => cell !== '')
        if (extra.length) beyond = noteDropped(beyond, row, extra)
      }
      yield { row, phone: record[phoneIndex] ?? '', fields }
    }
    if (headers) {
      for (const [index, dropped] of [...unnamed].sort(([a], [b]) => a - b)) {
        options.onWarning?.(printable(`${name} has a column with no name (column ${index + 1}) holding values ${whereDropped(dropped)}: they are not passed to the calls; name the column in the header to keep them`, 1000))
      }
      if (beyond) {
        options.onWarning?.(printable(`${name} has cells beyond its header's ${headers.length} columns ${whereDropped(beyond)}: they are not passed to the calls; name those columns in the header to keep them`, 1000))
      }
    }
  } catch (error) {
    if (error instanceof ContactsError) throw error
    if (error instanceof NotTextError) throw new ContactsError(error.message)
    const code = (error as { code?: string }).code
    if (code === 'ENOENT') throw new ContactsError(`cannot read ${name}: no such file`)
    // Node's bare "EACCES: permission denied, open '…'" named neither whose file it is nor the way out, every run.
    if ((code === 'EACCES' || code === 'EPERM') && typeof source === 'string') {
      const owned = ownerAndMode(source)
      throw new ContactsError(printable(`cannot read ${name}: this user (${processUser()}) may not read it — permission denied${owned ? `; the file is ${owned}` : ''}: give this user read access (chmod or chown)`, 1000))
    }
    // Every csv-parse error (its codes mostly start CSV_, not all: INVALID_OPENING_QUOTE) is the file's, not the service's.
    if (error instanceof CsvError || (typeof code === 'string' && code.startsWith('CSV_'))) throw new ContactsError(`${name} is not a readable CSV: ${(error as Error).message}`)
    throw error
  } finally {
    parser?.destroy()
    text.destroy()
    input.destroy()
  }
  if (!headers) throw new ContactsError(`${name} is empty: expected a header row with a "customer_phone" column`, 'no-phone-column')
}
