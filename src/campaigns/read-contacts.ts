import { createReadStream } from 'node:fs'
import { Readable } from 'node:stream'
import { parse } from 'csv-parse'
import { printable } from '../utils/printable.ts'
import { NotTextError, toUtf8 } from './csv-encoding.ts'

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
  /** Field delimiter; `,` unless given. */
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
 * A CSV that cannot be read as a contact list (as opposed to a bad row, which is a reject). Its message is
 * one printable line: it may quote what the file holds, and a binary file must not reach the terminal raw.
 */
export class ContactsError extends Error {
  override readonly name = 'ContactsError'
  constructor(message: string) {
    super(printable(message, 500))
  }
}

/** A header as compared with the aliases: lower case, spaces, dashes and dots as `_`. */
export function headerKey(header: string): string {
  return header.replace(/^\uFEFF/, '').trim().toLowerCase().replace(/[\s\-.]+/g, '_')
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

/** Async iterator of the file's contact rows, in file order. Throws `ContactsError` for an unusable file. */
export async function* readContacts(source: ContactsSource, options: ReadContactsOptions = {}): AsyncGenerator<ContactRow> {
  const name = options.name ?? (typeof source === 'string' ? source : 'the CSV')
  const input = toReadable(source)
  const text = toUtf8({ name, onWarning: options.onWarning })
  const parser = input.pipe(text).pipe(
    parse({
      bom: true,
      delimiter: options.delimiter ?? ',',
      skip_empty_lines: true,
      relax_column_count: true,
      // Also lets a quoted cell follow a space (`a, "b, c"`), as hand-edited files have.
      trim: true,
      info: true,
    }),
  )
  // pipe() does not forward a source error (a missing file): without this the iterator would wait forever.
  input.once('error', (error) => parser.destroy(error))
  text.once('error', (error) => parser.destroy(error))
  let headers: string[] | undefined
  let phoneIndex = -1
  // csv-parse counts a line break inside a quoted cell written as \r\n as two lines; the file's editor, one. The
  // surplus so far, taken off each row number, so `row` stays the line (where the row ends) the user sees.
  let surplus = 0
  try {
    for await (const item of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
      const { info } = item
      const record = item.record
      for (const cell of record) if (cell.includes('\r')) surplus += crlfs(cell)
      // A row of empty cells (",,,") is an empty line to a spreadsheet user.
      if (record.every((cell) => cell === '')) continue
      if (!headers) {
        headers = record.map((h) => h.replace(/^\uFEFF/, '').trim())
        phoneIndex = findPhoneColumn(headers, options.phoneAliases)
        if (phoneIndex < 0) {
          const found = headers.filter(Boolean).join(', ') || 'no columns'
          throw new ContactsError(
            `${name} has no phone column: name one "customer_phone" (or phone, mobile, contact_number, msisdn); found: ${found}`,
          )
        }
        continue
      }
      const fields: Record<string, string> = {}
      for (let i = 0; i < headers.length; i++) {
        if (i === phoneIndex) continue
        const header = headers[i]!
        // An unnamed column carries nothing a prompt could refer to.
        if (!header) continue
        fields[header] = record[i] ?? ''
      }
      yield { row: info.lines - surplus, phone: record[phoneIndex] ?? '', fields }
    }
  } catch (error) {
    if (error instanceof ContactsError) throw error
    if (error instanceof NotTextError) throw new ContactsError(error.message)
    const code = (error as { code?: string }).code
    if (code === 'ENOENT') throw new ContactsError(`cannot read ${name}: no such file`)
    if (typeof code === 'string' && code.startsWith('CSV_')) throw new ContactsError(`${name} is not a readable CSV: ${(error as Error).message}`)
    throw error
  } finally {
    parser.destroy()
    text.destroy()
    input.destroy()
  }
  if (!headers) throw new ContactsError(`${name} is empty: expected a header row with a "customer_phone" column`)
}
