/**
 * Where the first U+0000 (a NUL character) sits in a parsed JSON value — `parameters[1].value`, `a field name in
 * metadata` — or undefined when there is none. A call whose parameters hold one is placed, and then its outcome
 * webhook, which carries them back, is refused by the receiver (Postgres text cannot hold U+0000): the call's result
 * never arrives. So a call is refused before it is placed, naming the field.
 */
export function pathOfNul(value: unknown, path = ''): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? path || 'the value' : undefined
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = pathOfNul(value[i], `${path}[${i}]`)
      if (found !== undefined) return found
    }
    return undefined
  }
  if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if (key.includes('\u0000')) return path ? `a field name in ${path}` : 'a field name'
      const found = pathOfNul(item, path ? `${path}.${key}` : key)
      if (found !== undefined) return found
    }
  }
  return undefined
}
