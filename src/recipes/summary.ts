/**
 * A run's summary is whatever `run` returned, kept as a JSON value so every reader (CLI --json,
 * /admin/recipes, the log) hands it on as a value, never as JSON text inside JSON.
 */
export function encodeSummary(value: unknown): string | null {
  if (value === undefined || value === null) return null
  try {
    return JSON.stringify(value) ?? null
  } catch {
    // Not serializable (a cycle, a BigInt): its text form is still worth keeping.
    return JSON.stringify(String(value))
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
