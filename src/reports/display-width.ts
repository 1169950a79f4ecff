/**
 * Columns a string takes in a monospaced view (a terminal, a mail client showing the text part): by grapheme, an East
 * Asian wide or fullwidth character or an emoji takes two, a combining mark or a joiner none, anything else one. What
 * `string-width` does, for the text part's bar labels only — cut to a few dozen characters, so the cost is a handful
 * of labels per report, never one per row.
 */

const graphemes = new Intl.Segmenter('en', { granularity: 'grapheme' })

/** Emoji shown as pictures (and flags, and a symbol asked to be one with U+FE0F): two columns. */
const EMOJI = /\p{Emoji_Presentation}|\p{Extended_Pictographic}\uFE0F|\p{Regional_Indicator}/u
/** Marks and format characters that draw nothing of their own (a cluster of only these, at the start of a string). */
const NO_WIDTH = /^[\p{Mn}\p{Me}\p{Cf}]+$/u

/** East Asian Wide (W) and Fullwidth (F) ranges of Unicode's EastAsianWidth.txt, outside the emoji blocks. */
const WIDE: ReadonlyArray<readonly [number, number]> = [
  [0x1100, 0x115f], [0x231a, 0x231b], [0x2329, 0x232a], [0x2e80, 0x303e], [0x3041, 0x33ff], [0x3400, 0x4dbf],
  [0x4e00, 0x9fff], [0xa000, 0xa4cf], [0xa960, 0xa97f], [0xac00, 0xd7a3], [0xf900, 0xfaff], [0xfe10, 0xfe19],
  [0xfe30, 0xfe6f], [0xff00, 0xff60], [0xffe0, 0xffe6], [0x16fe0, 0x18cff], [0x1b000, 0x1b2ff], [0x20000, 0x2fffd],
  [0x30000, 0x3fffd],
]

function isWide(codePoint: number): boolean {
  for (const [from, to] of WIDE) {
    if (codePoint < from) return false
    if (codePoint <= to) return true
  }
  return false
}

function clusterWidth(cluster: string): number {
  if (NO_WIDTH.test(cluster)) return 0
  if (isWide(cluster.codePointAt(0)!) || EMOJI.test(cluster)) return 2
  return 1
}

export function displayWidth(value: string): number {
  // ASCII, the usual label, is one column a character: no segmenting.
  if (/^[\x20-\x7e]*$/.test(value)) return value.length
  let width = 0
  for (const { segment } of graphemes.segment(value)) width += clusterWidth(segment)
  return width
}

/** `value` cut to at most `width` columns, ending in `…` when cut, never inside a character or its marks. */
export function cutToWidth(value: string, width: number): string {
  if (displayWidth(value) <= width) return value
  let kept = ''
  let used = 0
  for (const { segment } of graphemes.segment(value)) {
    const w = clusterWidth(segment)
    if (used + w > width - 1) break
    kept += segment
    used += w
  }
  return `${kept}…`
}

/** `value` cut to `width` columns and padded with spaces to exactly that many. */
export function padToWidth(value: string, width: number): string {
  const cut = cutToWidth(value, width)
  return cut + ' '.repeat(Math.max(0, width - displayWidth(cut)))
}
