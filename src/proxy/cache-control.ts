/**
 * The directive names in a Cache-Control (or Pragma) value, lower-cased. A quoted argument is skipped whole, so
 * the comma in `private="set-cookie, x-a"` does not start a directive.
 */
export function cacheDirectives(value: string | null): Set<string> {
  const names = new Set<string>()
  if (value === null) return names
  let part = ''
  let quoted = false
  for (let i = 0; i <= value.length; i++) {
    const c = value[i]
    if (c === undefined || (c === ',' && !quoted)) {
      const name = part.split('=')[0]!.trim().toLowerCase()
      if (name !== '') names.add(name)
      part = ''
      continue
    }
    // Only the name, before any `=`, is read: an escaped character in a quoted argument is skipped, quote or not.
    if (c === '\\' && quoted) i++
    else if (c === '"') quoted = !quoted
    else part += c
  }
  return names
}

/**
 * Whether the proxy may keep an answer: not when the provider says `no-store` (RFC 9111 §5.2.2.5), the one directive
 * that forbids keeping it at all. `private` and `no-cache` are read as this cache's design answers them: each entry is
 * one tenant's, served only to a key confirmed for that tenant — the user the answer was for — and kept for the TTLs
 * of its table, which webhooks about a conversation cut short. Many APIs mark every answer `private` or `no-cache`;
 * refusing to keep those switched the proxy's cache off whole.
 */
export function mayStore(headers: Headers): boolean {
  return !cacheDirectives(headers.get('cache-control')).has('no-store')
}

/**
 * What a read asks of the cache: `no-cache`, an answer from the provider (which then refreshes the entry);
 * `no-store`, an answer from the provider that is not kept. Pragma: no-cache counts only without Cache-Control
 * (RFC 9111 §5.4).
 */
export function requestCacheMode(headers: Headers): 'default' | 'no-cache' | 'no-store' {
  const cacheControl = headers.get('cache-control')
  if (cacheControl === null) return cacheDirectives(headers.get('pragma')).has('no-cache') ? 'no-cache' : 'default'
  const directives = cacheDirectives(cacheControl)
  if (directives.has('no-store')) return 'no-store'
  return directives.has('no-cache') ? 'no-cache' : 'default'
}
