import { isUtf8 } from 'node:buffer'

/**
 * The offset of the first byte that does not start a well-formed UTF-8 sequence (Unicode table 3-7:
 * no overlongs, no surrogates, nothing past U+10FFFF), or -1 when all of it is UTF-8. `TextDecoder`
 * only says "invalid" without a position, and a position is what lets an error name the field.
 * `from` resumes a scan after an earlier invalid byte (linear over a file with many of them).
 */
export function firstInvalidUtf8(bytes: Uint8Array, from = 0): number {
  if (from === 0 && isUtf8(bytes)) return -1
  const n = bytes.length
  let i = from
  const cont = (at: number, lo = 0x80, hi = 0xbf) => at < n && bytes[at]! >= lo && bytes[at]! <= hi
  while (i < n) {
    const b = bytes[i]!
    if (b < 0x80) i += 1
    else if (b >= 0xc2 && b <= 0xdf && cont(i + 1)) i += 2
    else if (b === 0xe0 && cont(i + 1, 0xa0) && cont(i + 2)) i += 3
    else if (((b >= 0xe1 && b <= 0xec) || b === 0xee || b === 0xef) && cont(i + 1) && cont(i + 2)) i += 3
    else if (b === 0xed && cont(i + 1, 0x80, 0x9f) && cont(i + 2)) i += 3
    else if (b === 0xf0 && cont(i + 1, 0x90) && cont(i + 2) && cont(i + 3)) i += 4
    else if (b >= 0xf1 && b <= 0xf3 && cont(i + 1) && cont(i + 2) && cont(i + 3)) i += 4
    else if (b === 0xf4 && cont(i + 1, 0x80, 0x8f) && cont(i + 2) && cont(i + 3)) i += 4
    else return i
  }
  return -1
}
