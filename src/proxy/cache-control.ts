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
 * Whether the proxy, a cache shared by everyone holding a key, may keep an answer (RFC 9111 §3, §5.2.2): not when
 * the provider says `no-store`, nor `private` (meant for one user; its field-named form is taken whole — the
 * answer is kept entire or not at all), nor `no-cache`, which allows reuse only once checked with the provider —
 * and this cache does not check, it serves its copy until the table's TTL.
 */
export function mayStore(headers: Headers): boolean {
  const directives = cacheDirectives(headers.get('cache-control'))
  return !directives.has('no-store') && !directives.has('private') && !directives.has('no-cache')
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
