/**
 * The deepest nesting switchboard takes in a JSON body: far beyond any event or call (the provider's are 4–5 levels
 * deep, an agent's extracted results a few more), and far below where `JSON.stringify` runs out of stack (~5,000
 * levels on Node 20) — a signed webhook nested 10,000 deep was stored, and then its event page answered 500; a call
 * nested 6,000 deep was a 500, or a 502 that marked the provider down.
 */
export const MAX_JSON_DEPTH = 128

/**
 * True when the JSON text nests arrays and objects deeper than `max`. A scan of the text, not of the parsed value:
 * no recursion, nothing allocated, and it stops at the first level too deep. Brackets inside strings do not count.
 */
export function jsonNestedDeeperThan(text: string, max: number = MAX_JSON_DEPTH): boolean {
  // Nesting deeper than `max` takes more than `max` opening brackets. Counting them with indexOf (native) first spares
  // the character-by-character scan for nearly every body: on the receiver's path that scan cost as much as the
  // JSON.parse (~2.5 µs for a 750-character event), the count a tenth of it.
  let brackets = 0
  for (let i = text.indexOf('{'); i !== -1 && brackets <= max; i = text.indexOf('{', i + 1)) brackets++
  for (let i = text.indexOf('['); i !== -1 && brackets <= max; i = text.indexOf('[', i + 1)) brackets++
  if (brackets <= max) return false
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++ // a backslash: the next character is escaped
      else if (c === 0x22) inString = false
    } else if (c === 0x22) {
      inString = true
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true
    } else if (c === 0x7d || c === 0x5d) {
      depth--
    }
  }
  return false
}
