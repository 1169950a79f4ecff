import { Readable, Transform, type TransformCallback } from 'node:stream'
import { TextDecoder } from 'node:util'
import { firstInvalidUtf8 } from '../utils/utf8.ts'
import { printable } from '../utils/printable.ts'

/** What a file that is not text looks like, by its first bytes: named so the user knows what to export instead. */
const SIGNATURES: Array<[number[], string]> = [
  [[0x50, 0x4b, 0x03, 0x04], 'a ZIP archive (an .xlsx or .ods workbook is one)'],
  [[0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1], 'an Office document (an old .xls workbook is one)'],
  [[0x25, 0x50, 0x44, 0x46], 'a PDF document'],
  [[0x89, 0x50, 0x4e, 0x47], 'a PNG image'],
  [[0xff, 0xd8, 0xff], 'a JPEG image'],
  [[0x47, 0x49, 0x46, 0x38], 'a GIF image'],
  [[0x1f, 0x8b], 'a gzip archive'],
]

/** How much of the start is examined for signs of binary content. */
const SNIFF_BYTES = 8192

function looksLike(head: Uint8Array): string | undefined {
  return SIGNATURES.find(([magic]) => magic.every((b, i) => head[i] === b))?.[1]
}

/** Text has no NUL, and few control characters besides tab, line breaks, form feed and the DOS end-of-file mark. */
function isBinary(head: Uint8Array): boolean {
  if (head.indexOf(0) !== -1) return true
  let controls = 0
  for (const b of head) if (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d && b !== 0x0c && b !== 0x1a) controls++
  return controls > Math.max(8, head.length / 100)
}

/** Bytes at the end of `buf` that start a UTF-8 sequence the next chunk completes. */
function incompleteTail(buf: Uint8Array): number {
  for (let k = 1; k <= Math.min(3, buf.length); k++) {
    const b = buf[buf.length - k]!
    if (b >= 0x80 && b <= 0xbf) continue
    if (b < 0xc0) return 0
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2
    return need > k ? k : 0
  }
  return 0
}

/**
 * Windows-1252's characters for bytes 0x80–0x9F (WHATWG's encoding standard; the five it leaves undefined map to the
 * control code of the same number). The rest of the table is Latin-1. Written out, not asked of TextDecoder: Node
 * built without full ICU decodes 'windows-1252' as Latin-1, turning O’Brien's 0x92 into a C1 control character.
 */
const CP1252_HIGH = '\u20ac\u0081\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u008d\u017d\u008f\u0090\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u009d\u017e\u0178'
/** Windows-1252, the superset of Latin-1 that spreadsheets on Windows write (WHATWG's decoder for "latin1"). */
const CP1252 = Array.from({ length: 256 }, (_, b) => (b >= 0x80 && b <= 0x9f ? CP1252_HIGH[b - 0x80]! : String.fromCharCode(b)))

export class NotTextError extends Error {
  override readonly name = 'NotTextError'
}

export interface CsvEncodingOptions {
  /** The file's name, in messages. */
  name: string
  /** Told once per file when bytes were not UTF-8 and were read as Windows-1252. */
  onWarning?: (message: string) => void
}

/**
 * Bytes of a contacts file → UTF-8 bytes for the CSV parser. UTF-8 passes through untouched (the common
 * case costs one native validity check per chunk). A file that is binary (a workbook, an image, anything
 * with NUL bytes) is refused with `NotTextError` naming what it looks like. UTF-16 with a byte-order mark
 * is decoded. Any other byte that is not UTF-8 — a Latin-1 / Windows-1252 export, or one such row pasted
 * into a UTF-8 file — is read as Windows-1252 and reported once through `onWarning`, with an example.
 */
export function toUtf8(options: CsvEncodingOptions): Transform {
  let first = true
  let carry: Uint8Array = new Uint8Array(0)
  let utf16: TextDecoder | undefined
  let transcoded = 0
  let example: string | undefined

  const fail = (what: string) => new NotTextError(`${options.name} is not a CSV file: it looks like ${what}; export it as "CSV UTF-8" and use that file instead`)

  /** Valid UTF-8 stays as is; each invalid byte becomes its Windows-1252 character, re-encoded as UTF-8. */
  function mend(bytes: Uint8Array): Uint8Array {
    let bad = firstInvalidUtf8(bytes)
    if (bad < 0) return bytes
    let text = ''
    let from = 0
    const decoder = new TextDecoder()
    while (bad >= 0) {
      text += decoder.decode(bytes.subarray(from, bad))
      if (example === undefined) {
        const start = Math.max(text.lastIndexOf(',') + 1, text.lastIndexOf('\n') + 1, text.length - 20)
        // The rest of the cell, as a Latin-1 file would read: enough for the user to recognise the name.
        const rest = bytes.subarray(bad, bad + 40)
        const stop = rest.findIndex((b) => b === 0x2c || b === 0x0a || b === 0x0d || b === 0x22)
        example = text.slice(start) + Array.from(stop < 0 ? rest : rest.subarray(0, stop), (b) => CP1252[b]!).join('')
      }
      text += CP1252[bytes[bad]!]!
      transcoded++
      from = bad + 1
      bad = from < bytes.length ? firstInvalidUtf8(bytes, from) : -1
    }
    text += decoder.decode(bytes.subarray(from))
    return Buffer.from(text, 'utf8')
  }

  return new Transform({
    transform(chunk: Buffer, _encoding, done: TransformCallback) {
      if (first) {
        first = false
        const head = chunk.subarray(0, SNIFF_BYTES)
        if (head[0] === 0xff && head[1] === 0xfe) utf16 = new TextDecoder('utf-16le')
        else if (head[0] === 0xfe && head[1] === 0xff) utf16 = new TextDecoder('utf-16be')
        else {
          const kind = looksLike(head)
          if (kind) return done(fail(kind))
          if (isBinary(head)) return done(fail('binary data (it has NUL or control bytes)'))
        }
      }
      if (utf16) return done(null, Buffer.from(utf16.decode(chunk, { stream: true }), 'utf8'))
      if (chunk.indexOf(0) !== -1) return done(fail('binary data (it has NUL bytes)'))
      const bytes = carry.length ? Buffer.concat([carry, chunk]) : chunk
      const keep = incompleteTail(bytes)
      carry = keep ? Uint8Array.prototype.slice.call(bytes, bytes.length - keep) : new Uint8Array(0)
      done(null, mend(keep ? bytes.subarray(0, bytes.length - keep) : bytes))
    },
    flush(done: TransformCallback) {
      if (utf16) {
        const rest = utf16.decode()
        if (rest) this.push(Buffer.from(rest, 'utf8'))
      } else if (carry.length) this.push(mend(carry))
      if (transcoded > 0) {
        options.onWarning?.(
          `${options.name} is not UTF-8: ${transcoded} byte${transcoded === 1 ? ' was' : 's were'} read as Windows-1252 (Latin-1), the first in "${printable(example ?? '', 60)}"; check the names, or save it as "CSV UTF-8"`,
        )
      }
      done()
    },
  })
}

/** A whole file's bytes as text, decoded as `toUtf8` decodes a contacts file (UTF-16, Windows-1252; binary refused). */
export async function decodeCsvText(bytes: Uint8Array, options: CsvEncodingOptions): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of Readable.from([bytes]).pipe(toUtf8(options))) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}
