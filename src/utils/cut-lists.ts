/**
 * `value` (plain JSON) with every list cut to its first `kept` items and every string to 40 × `kept` characters. An
 * object's list `key` that was cut gets a sibling `key_omitted` with how many items went, so the items kept stay what
 * they were and a reader sees both counts. Used, with `kept` halving until the whole fits, to bound a recipe run's
 * summary (src/recipes/summary.ts) and a log line (src/utils/log-line-bound.ts).
 */
export function cutLists(value: unknown, kept: number): unknown {
  if (typeof value === 'string') return value.length > kept * 40 ? `${value.slice(0, kept * 40)}… (${value.length - kept * 40} more characters)` : value
  if (value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.slice(0, kept).map((item) => cutLists(item, kept))
  const out: Record<string, unknown> = {}
  for (const [key, v] of Object.entries(value)) {
    Object.defineProperty(out, key, { value: cutLists(v, kept), enumerable: true, writable: true, configurable: true })
    if (Array.isArray(v) && v.length > kept && !(`${key}_omitted` in value)) out[`${key}_omitted`] = v.length - kept
  }
  return out
}
