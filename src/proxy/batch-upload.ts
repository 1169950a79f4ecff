import { basename } from 'node:path'
import { Readable } from 'node:stream'
import type { ReadableStream as NodeWebReadableStream } from 'node:stream/web'
import { promisify } from 'node:util'
import { brotliDecompress, gunzip, inflate } from 'node:zlib'
import type { Runtime } from '../runtime.ts'
import { blockedAmong, dncKeysOf, DncFileError } from '../campaigns/dnc.ts'
import { ContactsError, headerKey, readContacts, type ContactRow } from '../campaigns/read-contacts.ts'
import { apiErrorResponse } from '../upstream/api-error.ts'
import { nextTurn } from '../utils/next-turn.ts'
import { printable } from '../utils/printable.ts'
import { readLimited } from '../utils/read-limited.ts'
import { uploadCancelled, uploadTooLarge } from './stream-through.ts'
import { withCache } from './upstream.ts'

/** Numbers checked against the list per round: bounded memory, whatever the file's size. */
const CHECK_CHUNK = 5_000
/** Rows read between two turns of the event loop (~a few ms of reading and parsing). */
const ROWS_A_TURN = 1_000
/** Rows a refusal names (then "and N more"). */
const ROWS_SHOWN = 10

export type ScreenedUpload = { ok: true; request: Request } | { ok: false; reply: Response }

/**
 * `POST /v1/batch-call` sent through the proxy: the do-not-call list is checked before every batch row, as it is
 * before every call (DESIGN.md → Campaign rules). The upload is read whole — at most PROXY_MAX_UPLOAD_BYTES, a 413
 * past it as before — and its CSV read both as a recipe reads a contacts file (src/campaigns/read-contacts.ts: the
 * phone column by its aliases, UTF-16 and Latin-1 exports, `;` delimiters) and as the provider reads a batch (commas,
 * the `customer_phone` column; 0.26.1 — before, a header the first reading took for `;`-separated, or a look-alike
 * column before `customer_phone`, sent listed numbers on unchecked). A file with a listed number is refused, 400
 * `invalid_request` naming its rows, without reaching the provider; otherwise the bytes go on exactly as they came
 * (a compressed upload stays compressed). What is no batch at all — not multipart, no `file`, no phone column —
 * goes on unchanged too: the provider refuses it for the same reason, and it has no row to call. What could hold rows
 * the proxy cannot read — a multipart body it cannot parse, a file that is not text or a CSV its reader gives up on
 * (0.25.0; it went on unchecked before) — is refused rather than sent unchecked. Until 0.24.0 the upload streamed to
 * the provider unread.
 */
export async function screenBatchUpload(
  rt: Runtime,
  request: Request,
  options: {
    /** Asked before a refusal that names listed rows (it tells what the list holds): a reply to give instead, if any. */
    beforeListedRefusal?: () => Promise<Response | undefined>
  } = {},
): Promise<ScreenedUpload> {
  const refuse = (reply: Response): ScreenedUpload => ({ ok: false, reply: withCache(reply, 'BYPASS') })
  const max = rt.config.proxy.maxUploadBytes
  const tooLarge = (): ScreenedUpload => ({ ok: false, reply: uploadTooLarge(max) })
  if (Number(request.headers.get('content-length') ?? 0) > max) return tooLarge()
  let read: Awaited<ReturnType<typeof readLimited>>
  try {
    read = await readLimited(request.body, max)
  } catch (error) {
    return { ok: false, reply: uploadCancelled(rt, '/v1/batch-call', { err: (error as Error).message }) }
  }
  if (!read.ok) return tooLarge()
  // Read into an ArrayBuffer of its own (never a SharedArrayBuffer): typed as such for the Fetch API's BodyInit.
  const bytes = read.bytes as Uint8Array<ArrayBuffer>
  const passOn = (): ScreenedUpload => ({ ok: true, request: new Request(request.url, { method: request.method, headers: request.headers, body: bytes }) })

  const type = request.headers.get('content-type') ?? ''
  if (!/^multipart\/form-data\b/i.test(type.trim())) return passOn()
  const decoded = await decode(request.headers.get('content-encoding'), bytes, max)
  if (!decoded.ok) return refuse(apiErrorResponse(415, 'invalid_request', decoded.message, { headers: { 'accept-encoding': 'gzip, deflate, br, identity' } }))
  let files: FormDataEntryValue[]
  try {
    files = (await new Response(decoded.bytes, { headers: { 'content-type': type } }).formData()).getAll('file')
  } catch (error) {
    return refuse(apiErrorResponse(400, 'invalid_request', `the upload is not multipart/form-data switchboard can read (${printable((error as Error).message, 120)}): its numbers could not be checked against the do-not-call list, so it was not sent`))
  }
  // Which of several the provider reads is not said: the first was checked, and a listed number in a later one went on.
  if (files.length > 1) {
    return refuse(apiErrorResponse(400, 'invalid_request', `the upload has ${files.length} "file" parts: send the batch's CSV as one "file" part (switchboard cannot tell which one the provider reads, so none was sent)`))
  }
  const [entry] = files
  if (entry === undefined) return passOn()
  // A part without a filename is a text field to FormData, but its text is the CSV all the same to a reader that takes it.
  const file = typeof entry === 'string' ? new Blob([entry], { type: 'text/csv' }) : entry

  let rows: number[]
  let count: number
  try {
    ;({ rows, count } = await listedRows(rt, file))
  } catch (error) {
    // No phone column (or no header): nothing the provider could call either; it answers for the file as it is.
    if (error instanceof ContactsError && error.kind === 'no-phone-column') return passOn()
    // A file the reader gives up on part-way (an unclosed quote, binary bytes after the header): the provider's own
    // reader may still call the rows it reads, so it is refused rather than sent unchecked.
    if (error instanceof ContactsError) {
      return refuse(apiErrorResponse(400, 'invalid_request', `${error.message}: its numbers could not be checked against the do-not-call list, so the batch was not uploaded`))
    }
    if (!(error instanceof DncFileError)) throw error
    rt.log.error({ path: '/v1/batch-call', file: error.file, err: error.message }, 'batch upload refused: the do-not-call file cannot be read; nothing is uploaded until it can')
    return refuse(apiErrorResponse(503, 'internal_error', `switchboard cannot read its do-not-call file (${basename(error.file)}), so the batch was not uploaded; see its logs`))
  }
  if (count === 0) return passOn()
  const instead = await options.beforeListedRefusal?.()
  if (instead) return { ok: false, reply: instead }
  rt.log.info({ path: '/v1/batch-call', rows: count }, 'batch upload refused: rows on the do-not-call list')
  const shown = count > rows.length ? `${rows.join(', ')} and ${count - rows.length} more` : rows.length === 1 ? `${rows[0]}` : `${rows.slice(0, -1).join(', ')} and ${rows.at(-1)}`
  return refuse(
    apiErrorResponse(
      400,
      'invalid_request',
      `customer_phone is on the do-not-call list (switchboard) in ${count === 1 ? `row ${shown}` : `${count} rows (rows ${shown})`} of the file: the batch was not uploaded — take those rows out, or launch the list from a recipe (launchBatch leaves them out)`,
    ),
  )
}

/**
 * The ways the file's rows may be read, each with the cells that may be called: as a recipe reads a contacts file (the
 * delimiter its header line uses, the phone column by its aliases) and as the provider reads a batch (commas, the column
 * named `customer_phone`). Where they differ — a header with more `;` or tabs than commas ("notes (time; language)"), a
 * `Customer Phone` column before `customer_phone` — the provider calls what the first reading did not check, so every
 * reading is checked. In the second, a column the reader renamed as a repeat (`customer_phone_2`) is checked too.
 */
const READINGS: Array<{ delimiter?: string; cells(contact: ContactRow): string[] }> = [
  { cells: (contact) => [contact.phone] },
  {
    delimiter: ',',
    cells: (contact) => [contact.phone, ...Object.entries(contact.fields).filter(([name]) => /^customer_phone(_\d+)?$/.test(headerKey(name))).map(([, value]) => value)],
  },
]

/**
 * The rows (line numbers, as a spreadsheet shows them) whose number the do-not-call list holds, in any of READINGS:
 * the first ROWS_SHOWN, and how many. Throws the first reading's `no-phone-column` error when no reading finds one.
 */
async function listedRows(rt: Runtime, file: Blob): Promise<{ rows: number[]; count: number }> {
  const listed = new Set<number>()
  let noPhoneColumn: ContactsError | undefined
  let read = 0
  for (const reading of READINGS) {
    try {
      await checkReading(rt, file, reading, listed)
      read++
    } catch (error) {
      if (!(error instanceof ContactsError && error.kind === 'no-phone-column')) throw error
      noPhoneColumn ??= error
    }
  }
  if (read === 0 && noPhoneColumn) throw noPhoneColumn
  const rows = [...listed].sort((a, b) => a - b)
  return { rows: rows.slice(0, ROWS_SHOWN), count: rows.length }
}

/** Adds to `listed` the rows of one reading of the file whose number the do-not-call list holds. */
async function checkReading(rt: Runtime, file: Blob, reading: (typeof READINGS)[number], listed: Set<number>): Promise<void> {
  let pending: Array<{ row: number; e164: string }> = []
  const check = async () => {
    const blocked = await blockedAmong(rt, [...new Set(pending.map((p) => p.e164))])
    for (const p of pending) if (blocked.has(p.e164)) listed.add(p.row)
    pending = []
  }
  const contacts = readContacts(Readable.fromWeb(file.stream() as NodeWebReadableStream<Uint8Array>), { name: 'the uploaded file', delimiter: reading.delimiter })
  let sinceTurn = 0
  for await (const contact of contacts) {
    // A file held in memory is read by promises alone: without a turn of the event loop now and then, the receiver and
    // every other request waited for the whole file (a million rows: seconds).
    if (++sinceTurn === ROWS_A_TURN) {
      sinceTurn = 0
      await nextTurn()
    }
    for (const cell of reading.cells(contact)) {
      if (cell === '') continue
      // A number that does not normalise is compared as written and as the number within it, as isBlocked compares one.
      for (const key of dncKeysOf(cell, rt.config.defaultCountry)) pending.push({ row: contact.row, e164: key })
    }
    if (pending.length >= CHECK_CHUNK) await check()
  }
  if (pending.length > 0) await check()
}

const DECOMPRESS = { gzip: promisify(gunzip), 'x-gzip': promisify(gunzip), deflate: promisify(inflate), br: promisify(brotliDecompress) } as const

/**
 * The body as the provider will read it: a compressed upload is checked uncompressed (never past `max` bytes), on
 * Node's thread pool — decompressed on the event loop, a 50 KB upload that grows to 20 MB held the receiver a third of
 * a second.
 */
async function decode(encoding: string | null, bytes: Uint8Array<ArrayBuffer>, max: number): Promise<{ ok: true; bytes: Uint8Array<ArrayBuffer> } | { ok: false; message: string }> {
  const name = encoding?.trim().toLowerCase() ?? ''
  if (name === '' || name === 'identity') return { ok: true, bytes }
  try {
    if (Object.hasOwn(DECOMPRESS, name)) {
      const decompressed = await DECOMPRESS[name as keyof typeof DECOMPRESS](bytes, { maxOutputLength: max })
      return { ok: true, bytes: new Uint8Array(decompressed.buffer as ArrayBuffer, decompressed.byteOffset, decompressed.byteLength) }
    }
  } catch (error) {
    return { ok: false, message: `the upload's ${name} body cannot be decompressed (${printable((error as Error).message, 80)}), so its numbers could not be checked against the do-not-call list: it was not sent` }
  }
  return { ok: false, message: `Content-Encoding "${printable(name, 40)}" is not one switchboard reads (gzip, deflate, br), so the batch's numbers could not be checked against the do-not-call list: send it uncompressed` }
}
