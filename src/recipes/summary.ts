/**
 * A run's summary is whatever `run` returned, kept as a JSON value so every reader (CLI --json,
 * /admin/recipes, the log) hands it on as a value, never as JSON text inside JSON.
 */
export function encodeSummary(value: unknown): string | null {
  if (value === undefined || value === null) return null
  try {
    return JSON.stringify(value) ?? null
  } catch {
    // Not plain JSON (a BigInt, a cycle): keep its figures rather than lose the run's summary. This must never
    // throw — it runs after the run's `running` row was written, and a throw here would leave that row open.
    return lenientJson(value) ?? textOf(value)
  }
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
