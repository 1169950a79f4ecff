import { escapeHtml, showUnshown, visibleEscape } from './html-escape.ts'

/**
 * The most characters (code points) of a data-derived label — a campaign, a results key or value, a failure reason, a
 * batch's name or error — that the report mail shows; longer ones end in `…`. Those come from webhooks and the
 * provider, up to about 1 MiB each: 30 calls with campaigns of 300 KB made a 17 MB mail. The CSV attachment keeps
 * every value whole.
 */
export const LABEL_MAX = 120

/**
 * Line breaks but the ones UNSHOWN already covers (VT, FF and NEL are control characters), and tabs: characters HTML
 * lays out as a space but a text part does not. In the text part a campaign holding a line feed started a line of its
 * own (it forged a figures line under another group's name), and a tab pushed a bar line's columns out of place.
 */
const LINE_BREAK = /[\t\n\r\u2028\u2029]/g

/** UTF-16 units of the first `count` code points of `value` (or of all of it, when it has fewer). */
function unitsOfCodePoints(value: string, count: number): number {
  let units = 0
  for (let n = 0; n < count && units < value.length; n++) units += value.codePointAt(units)! > 0xffff ? 2 : 1
  return units
}

/**
 * `value` cut to `max` code points, the last being `…`. By code points, not UTF-16 units: a cut inside a surrogate
 * pair leaves half a character, which mail encoders write as U+FFFD or refuse. A walk, not `Array.from`, so a 1 MiB
 * value costs `max` steps.
 */
export function cutLabel(value: string, max: number = LABEL_MAX): string {
  if (value.length <= max) return value
  const kept = unitsOfCodePoints(value, max - 1)
  // One more code point fits in place of the `…`; two or more do not.
  const last = kept + unitsOfCodePoints(value.slice(kept, kept + 2), 1)
  return last >= value.length ? value : `${value.slice(0, kept)}…`
}

/** A label for the HTML part: cut, then escaped (escapeHtml writes UNSHOWN characters as escapes). */
export function htmlLabel(value: string | number): string {
  return escapeHtml(cutLabel(String(value)))
}

/**
 * A label for the text part: cut, then on one line with UNSHOWN characters and line breaks as the escapes the HTML
 * part shows. Raw, webhook data could add lines to the text or hide and reorder what follows it.
 */
export function textLabel(value: string | number): string {
  return showUnshown(cutLabel(String(value))).replace(LINE_BREAK, visibleEscape)
}
