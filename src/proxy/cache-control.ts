/**
 * The directives of a Cache-Control (or Pragma) value: each name, lower-cased, with its argument (unquoted; undefined
 * when it has none). A quoted argument is read whole, so the comma in `private="set-cookie, x-a"` does not start a
 * directive.
 */
export function cacheDirectives(value: string | null): Map<string, string | undefined> {
  const directives = new Map<string, string | undefined>()
  if (value === null) return directives
  let part = ''
  let quoted = false
  for (let i = 0; i <= value.length; i++) {
    const c = value[i]
    if (c === undefined || (c === ',' && !quoted)) {
      const at = part.indexOf('=')
      const name = (at === -1 ? part : part.slice(0, at)).trim().toLowerCase()
      if (name !== '') directives.set(name, at === -1 ? undefined : part.slice(at + 1).trim())
      part = ''
      continue
    }
    if (c === '\\' && quoted) part += value[++i] ?? ''
    else if (c === '"') quoted = !quoted
    else part += c
  }
  return directives
}

/**
 * A directive's delta-seconds (`max-age=60`) in milliseconds. A value that is not a number of seconds reads as 0 —
 * the reading that serves nothing too old (RFC 9111 §1.2.2, §4.2.1: an invalid freshness makes the answer stale).
 */
function deltaMs(argument: string | undefined): number {
  return argument !== undefined && /^\d+$/.test(argument) ? Number(argument) * 1000 : 0
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
 * How long the provider lets a shared cache hold an answer fresh, when it says: `s-maxage`, which is meant for shared
 * caches such as this proxy, else `max-age` (RFC 9111 §5.2.2.10, §4.2.1). The proxy keeps an entry fresh for the
 * shorter of this and its table's TTL, never longer than the table says.
 */
export function providerFreshnessMs(headers: Headers): number | undefined {
  const directives = cacheDirectives(headers.get('cache-control'))
  if (directives.has('s-maxage')) return deltaMs(directives.get('s-maxage'))
  if (directives.has('max-age')) return deltaMs(directives.get('max-age'))
  return undefined
}

/**
 * Whether the provider forbids a shared cache such as this proxy to serve its answer stale: `must-revalidate`,
 * `proxy-revalidate`, or `s-maxage`, which implies proxy-revalidate (RFC 9111 §4.2.4, §5.2.2.2, §5.2.2.8, §5.2.2.10).
 * Once expired, such an entry is answered only after the provider was asked — never STALE when it fails.
 */
export function forbidsStale(headers: Headers): boolean {
  const directives = cacheDirectives(headers.get('cache-control'))
  return directives.has('must-revalidate') || directives.has('proxy-revalidate') || directives.has('s-maxage')
}

export interface RequestCachePolicy {
  /**
   * `no-cache`, an answer from the provider (which then refreshes the entry); `no-store`, an answer from the provider
   * that is not kept; `default`, a fresh entry if there is one.
   */
  mode: 'default' | 'no-cache' | 'no-store'
  /** With `default`: the oldest entry, in whole seconds of Age, the caller takes (its `max-age`). */
  maxAgeSeconds?: number
  /** `only-if-cached`: a fresh entry or a 504, the provider never asked (RFC 9111 §5.2.1.7). */
  onlyIfCached: boolean
}

/**
 * What a read asks of the cache (RFC 9111 §5.2.1). `max-age=0` asks the provider as `no-cache` does; `max-age=N` takes
 * an entry at most N seconds old; `only-if-cached` forbids asking the provider at all. Pragma: no-cache counts only
 * without Cache-Control (RFC 9111 §5.4).
 */
export function requestCachePolicy(headers: Headers): RequestCachePolicy {
  const cacheControl = headers.get('cache-control')
  if (cacheControl === null) return { mode: cacheDirectives(headers.get('pragma')).has('no-cache') ? 'no-cache' : 'default', onlyIfCached: false }
  const directives = cacheDirectives(cacheControl)
  const onlyIfCached = directives.has('only-if-cached')
  if (directives.has('no-store')) return { mode: 'no-store', onlyIfCached }
  if (directives.has('no-cache')) return { mode: 'no-cache', onlyIfCached }
  if (!directives.has('max-age')) return { mode: 'default', onlyIfCached }
  const maxAgeMs = deltaMs(directives.get('max-age'))
  return maxAgeMs === 0 ? { mode: 'no-cache', onlyIfCached } : { mode: 'default', maxAgeSeconds: maxAgeMs / 1000, onlyIfCached }
}
