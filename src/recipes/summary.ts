/**
 * A run's summary is whatever `run` returned, kept as a JSON value so every reader (CLI --json,
 * /admin/recipes, the log) hands it on as a value, never as JSON text inside JSON.
 */
export function encodeSummary(value: unknown): string | null {
  if (value === undefined || value === null) return null
  let text: string | null
  try {
    text = JSON.stringify(value) ?? null
  } catch {
    // Not plain JSON (a BigInt, a cycle): keep its figures rather than lose the run's summary. This must never
    // throw — it runs after the run's `running` row was written, and a throw here would leave that row open.
    text = lenientJson(value) ?? textOf(value)
  }
  return text !== null && text.length > MAX_SUMMARY_CHARS ? boundedSummary(JSON.parse(text) as unknown, text.length) : text
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
    const text = JSON.stringify(cut(value, kept))
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

/** `value` with every list cut to its first `kept` items (see boundedSummary) and every string to 40 × `kept` characters. */
function cut(value: unknown, kept: number): unknown {
  if (typeof value === 'string') return value.length > kept * 40 ? `${value.slice(0, kept * 40)}… (${value.length - kept * 40} more characters)` : value
  if (value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.slice(0, kept).map((item) => cut(item, kept))
  const out: Record<string, unknown> = {}
  for (const [key, v] of Object.entries(value)) {
    out[key] = cut(v, kept)
    if (Array.isArray(v) && v.length > kept && !(`${key}_omitted` in value)) out[`${key}_omitted`] = v.length - kept
  }
  return out
}

/** JSON with BigInts as their digits and a reference back to an enclosing object as "[Circular]"; undefined if even that fails. */
function lenientJson(value: unknown): string | undefined {
  // The objects enclosing the one being written: a replacer's `this` is the holder of the key it is given.
  const ancestors: unknown[] = []
  function replacer(this: unknown, _key: string, v: unknown): unknown {
    if (typeof v === 'bigint') return v.toString()
    if (typeof v !== 'object' || v === null) return v
    while (ancestors.length > 0 && ancestors[ancestors.length - 1] !== this) ancestors.pop()
    if (ancestors.includes(v)) return '[Circular]'
    ancestors.push(v)
    return v
  }
  try {
    return JSON.stringify(value, replacer) ?? undefined
  } catch {
    // A getter or toJSON that throws, a revoked proxy.
    return undefined
  }
}

/** The value's text form as a JSON string, or a fixed note: String() itself throws for a null-prototype object. */
function textOf(value: unknown): string {
  try {
    return JSON.stringify(String(value))
  } catch {
    return JSON.stringify('(a summary that cannot be written as JSON or text)')
  }
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
  for (const [key, v] of Object.entries(value)) {
    if (typeof v === 'number') {
      if (v !== 0) parts.push(`${key} ${v}`)
    } else if (typeof v === 'boolean') parts.push(`${key} ${v ? 'yes' : 'no'}`)
    else if (typeof v === 'string') {
      if (v !== '') parts.push(`${key} ${v}`)
    } else if (Array.isArray(v)) {
      if (v.length === 0) continue
      const words = v.every((item) => typeof item === 'string' && item.length <= 40) && v.length <= 3
      parts.push(words ? `${key} ${v.join(', ')}` : `${key} ${v.length}`)
    }
  }
  return parts.length ? parts.join(' · ') : 'nothing to report (every count 0)'
}
