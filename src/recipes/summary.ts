import { cutLists } from '../utils/cut-lists.ts'
import { MAX_JSON_DEPTH } from '../utils/json-depth.ts'

/**
 * A run's summary is whatever `run` returned, kept as a JSON value so every reader (CLI --json,
 * /admin/recipes, the log) hands it on as a value, never as JSON text inside JSON.
 */
export function encodeSummary(value: unknown): string | null {
  return storableSummary(value).text
}

/**
 * A run's summary as it is stored (`text`, or null for none), and what in it JSON could not keep as it was and was
 * stood in for (`replaced`: where, and by what — for the run's log). `JSON.stringify` alone made a returned Error,
 * Map, Set or RegExp `{}`, and a summary nested 5,000 deep or holding a throwing toJSON `"[object Object]"`. Never throws:
 * it runs after the run's `running` row was written, and a throw here would leave that row open.
 */
export function storableSummary(value: unknown): { text: string | null; replaced: string[] } {
  if (value === undefined || value === null) return { text: null, replaced: [] }
  const replaced: string[] = []
  let text: string | null
  try {
    text = JSON.stringify(jsonValue(value, 'summary', [], replaced, true)) ?? null
  } catch {
    text = JSON.stringify('(a summary that cannot be written as JSON or text)')
    replaced.push('summary: could not be written at all')
  }
  return { text: text !== null && text.length > MAX_SUMMARY_CHARS ? boundedSummary(JSON.parse(text) as unknown, text.length) : text, replaced }
}

/** How deep a summary nests before what is below is cut (the bound switchboard takes in any JSON body). */
export const MAX_SUMMARY_DEPTH = MAX_JSON_DEPTH

/** The stand-in for what lies deeper than MAX_SUMMARY_DEPTH, beside "[Circular]" for a reference back. */
export const DEEPER_OMITTED = `[nested deeper than ${MAX_SUMMARY_DEPTH} levels: omitted]`

/**
 * `value` as the plain JSON value JSON.stringify would write, except where that loses it: an Error as `{ name, message }`
 * (no stack), a Map as an object (its keys all strings) or a list of [key, value] entries, a Set as a list, a RegExp as
 * its source text (`/a+b/gi`), a BigInt as its digits, a reference back to an enclosing object as "[Circular]", nesting
 * past MAX_SUMMARY_DEPTH as DEEPER_OMITTED, and a toJSON or getter that throws as a note naming the problem. Each
 * stand-in is noted in `replaced`. `undefined` (a function, a symbol) where JSON leaves a value out.
 */
function jsonValue(value: unknown, path: string, ancestors: object[], replaced: string[], callToJson: boolean, key = ''): unknown {
  const note = (what: string, standIn: unknown, at = path) => {
    // A path 128 levels deep, or through a key of a megabyte, is told by its end.
    replaced.push(`${at.length > 120 ? `…${at.slice(-120)}` : at}: ${what}`)
    return standIn
  }
  if (typeof value === 'bigint') return note('a BigInt, kept as its digits', value.toString())
  if (typeof value === 'function' || typeof value === 'symbol' || value === undefined) return undefined
  if (value === null || typeof value !== 'object') return value
  if (ancestors.includes(value)) return note('a reference back to an enclosing object', '[Circular]')
  if (ancestors.length >= MAX_SUMMARY_DEPTH) return note(`nested deeper than ${MAX_SUMMARY_DEPTH} levels, cut`, DEEPER_OMITTED)
  try {
    const toJSON: unknown = callToJson ? (value as { toJSON?: unknown }).toJSON : undefined
    if (typeof toJSON === 'function') {
      let converted: unknown
      try {
        converted = toJSON.call(value, key)
      } catch (error) {
        return note(`its toJSON() threw (${messageOf(error)})`, `[toJSON() threw: ${messageOf(error)}]`)
      }
      return jsonValue(converted, path, ancestors, replaced, false, key)
    }
    if (value instanceof Number || value instanceof String || value instanceof Boolean) return value.valueOf()
    const inner = [...ancestors, value]
    const nested = (v: unknown, at: string, k: string) => jsonValue(v, at, inner, replaced, true, k)
    if (value instanceof Error) return note('an Error, kept as its name and message', { name: String(value.name), message: String(value.message) })
    if (value instanceof RegExp) return note('a RegExp, kept as its source text', String(value))
    if (value instanceof Map) {
      const entries = [...value.entries()]
      if (entries.every(([k]) => typeof k === 'string')) {
        const out: Record<string, unknown> = {}
        for (const [k, v] of entries as Array<[string, unknown]>) {
          const written = nested(v, `${path}.${k}`, k)
          if (written !== undefined) put(out, k, written)
        }
        return note('a Map, kept as an object', out)
      }
      return note('a Map, kept as a list of [key, value] entries', entries.map(([k, v], i) => [nested(k, `${path}[${i}][0]`, '0') ?? null, nested(v, `${path}[${i}][1]`, '1') ?? null]))
    }
    if (value instanceof Set) return note('a Set, kept as a list', [...value].map((v, i) => nested(v, `${path}[${i}]`, String(i)) ?? null))
    if (Array.isArray(value)) return value.map((v, i) => nested(v, `${path}[${i}]`, String(i)) ?? null)
    const out: Record<string, unknown> = {}
    for (const k of Object.keys(value)) {
      let v: unknown
      try {
        v = (value as Record<string, unknown>)[k]
      } catch (error) {
        put(out, k, note(`reading it threw (${messageOf(error)})`, `[reading it threw: ${messageOf(error)}]`, `${path}.${k}`))
        continue
      }
      const written = nested(v, `${path}.${k}`, k)
      if (written !== undefined) put(out, k, written)
    }
    return out
  } catch (error) {
    // A revoked proxy, a Map whose iteration throws: nothing of it can be read.
    return note(`could not be read (${messageOf(error)})`, `[could not be read: ${messageOf(error)}]`)
  }
}

/** A key set as data: `__proto__` (from JSON.parse, a Map) is a key like any other, not the object's prototype. */
function put(out: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true })
}

/** A thrown value's message, short and never throwing itself. */
function messageOf(error: unknown): string {
  try {
    const text = error instanceof Error ? error.message : String(error)
    return text.length > 100 ? `${text.slice(0, 100)}…` : text
  } catch {
    return 'a value that cannot be shown as text'
  }
}

/**
 * The most of a run's summary kept (characters of its JSON). A summary is stored with its run, logged on the run's
 * line, and read by every listing of runs; the shipped follow-up recipe lists each call it scheduled, and a sweep after
 * an outage, or a recipe returning a whole list, made rows and log lines of megabytes.
 */
export const MAX_SUMMARY_CHARS = 64 * 1024

/** Items a cut list keeps at first; halved until the summary fits. */
const FIRST_KEPT = 100

/**
 * A summary over MAX_SUMMARY_CHARS with its long lists cut: each list longer than a bound keeps its first items, and
 * an object's list `key` gets a sibling `key_omitted` with how many went (so a list's items stay what the recipe
 * returned, and summaryLine shows both counts); long strings keep their start. The bound halves until the whole fits;
 * a summary that still does not (thousands of keys) keeps its top level's numbers, booleans and short strings, with
 * `truncated` saying how large it was.
 */
function boundedSummary(value: unknown, chars: number): string {
  for (let kept = FIRST_KEPT; kept >= 1; kept = Math.floor(kept / 2)) {
    const text = JSON.stringify(cutLists(value, kept))
    if (text.length <= MAX_SUMMARY_CHARS) return text
  }
  const figures: Record<string, unknown> = {}
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [key, v] of Object.entries(value)) {
      if (typeof v === 'number' || typeof v === 'boolean' || (typeof v === 'string' && v.length <= 200)) figures[key] = v
      else if (Array.isArray(v)) figures[`${key}_omitted`] = v.length
    }
  }
  const text = JSON.stringify({ truncated: `a summary of ${chars} characters, over the ${MAX_SUMMARY_CHARS} kept`, ...figures })
  return text.length <= MAX_SUMMARY_CHARS ? text : JSON.stringify({ truncated: `a summary of ${chars} characters, over the ${MAX_SUMMARY_CHARS} kept` })
}

/** Rows written before summaries were JSON hold plain text: that text is the value. */
export function decodeSummary(text: string | null): unknown {
  if (text === null) return null
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

/** For people: a string as it is, anything else as compact JSON. */
export function summaryText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value)
}

/**
 * For a table cell: an object summary as its figures in a line ("queued 1 · calls 1 · mailed no"), counts of 0 and
 * empty values left out, a list by its length (or its items, when they are short words), nested objects left to the
 * run's own page. Anything else as `summaryText` gives it. Keys and values are the recipe's own: shown as text.
 */
export function summaryLine(value: unknown): string {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return summaryText(value)
  const parts: string[] = []
  const nested: string[] = []
  let zeros = 0
  for (const [key, v] of Object.entries(value)) {
    if (typeof v === 'number') {
      if (v !== 0) parts.push(`${key} ${v}`)
      else zeros++
    } else if (typeof v === 'boolean') parts.push(`${key} ${v ? 'yes' : 'no'}`)
    else if (typeof v === 'string') {
      if (v !== '') parts.push(`${key} ${v}`)
    } else if (Array.isArray(v)) {
      if (v.length === 0) continue
      const words = v.every((item) => typeof item === 'string' && item.length <= 40) && v.length <= 3
      parts.push(words ? `${key} ${v.join(', ')}` : `${key} ${v.length}`)
    } else if (v !== null && typeof v === 'object') nested.push(key)
  }
  if (parts.length) return parts.join(' · ')
  // Nothing this line shows, but objects it leaves out: they are the run's report, not "nothing".
  if (nested.length) return `${nested.join(', ')}: see the whole summary`
  return zeros > 0 ? 'nothing to report (every count 0)' : 'nothing to report'
}
