/**
 * Where the first string of a parsed JSON value (a key or a value) that `test` picks sits — `parameters[1].value`,
 * `a field name in metadata` — or undefined when there is none. The webhook receiver and POST /v1/call use it to refuse,
 * naming the field, what no database stores as it came (U+0000, which Postgres text cannot hold; half of a surrogate
 * pair, which Postgres' json refuses) — for a call, what its outcome webhook would carry back. Recursive: call it on a
 * value whose nesting is bounded (src/utils/json-depth.ts).
 */
export function pathOfString(value: unknown, test: (text: string) => boolean, path = ''): string | undefined {
  if (typeof value === 'string') return test(value) ? path || 'the value' : undefined
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = pathOfString(value[i], test, `${path}[${i}]`)
      if (found !== undefined) return found
    }
    return undefined
  }
  if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if (test(key)) return path ? `a field name in ${path}` : 'a field name'
      const found = pathOfString(item, test, path ? `${path}.${key}` : key)
      if (found !== undefined) return found
    }
  }
  return undefined
}
