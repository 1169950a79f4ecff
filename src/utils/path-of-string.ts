/**
 * Where the first string of a parsed JSON value (a key or a value) that `test` picks sits — `parameters[1].value`,
 * `a field name in metadata` — or undefined when there is none. POST /v1/call uses it to refuse, naming the field,
 * what the call's outcome webhook would carry back and the receiver refuse (U+0000, which Postgres text cannot hold;
 * half of a surrogate pair, which Postgres' json refuses): the call would be placed and its result never arrive.
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
