/**
 * The provider's ten endpoints as the proxy sees them. Anything else under /v1 is passed through
 * uncached (X-Cache: BYPASS), so an endpoint the provider adds later still works.
 */
export type ProxyRoute =
  | { name: 'create_call' }
  | { name: 'create_batch' }
  | { name: 'create_transcription' }
  | { name: 'batch_list' }
  | { name: 'batch'; id: string }
  | { name: 'batch_metrics'; id: string }
  | { name: 'conversation_list' }
  | { name: 'conversation'; id: string }
  | { name: 'recording'; id: string }
  | { name: 'transcription'; id: string }

function decode(segment: string): string | undefined {
  try {
    const value = decodeURIComponent(segment)
    return value === '' ? undefined : value
  } catch {
    return undefined
  }
}

/** Matches a method and path; HEAD counts as GET. */
export function matchRoute(method: string, pathname: string): ProxyRoute | undefined {
  const parts = pathname.replace(/\/+$/, '').split('/').slice(1)
  if (parts[0] !== 'v1') return undefined
  const [, a, b, c, d] = parts
  const read = method === 'GET' || method === 'HEAD'
  if (method === 'POST' && parts.length === 2 && a === 'call') return { name: 'create_call' }
  if (method === 'POST' && parts.length === 2 && a === 'batch-call') return { name: 'create_batch' }
  if (method === 'POST' && parts.length === 3 && a === 'transcription' && b === 'jobs') return { name: 'create_transcription' }
  if (!read) return undefined
  if (a === 'batch-calls') {
    if (parts.length === 2) return { name: 'batch_list' }
    const id = b === undefined ? undefined : decode(b)
    if (id === undefined) return undefined
    if (parts.length === 3) return { name: 'batch', id }
    if (parts.length === 4 && c === 'metrics') return { name: 'batch_metrics', id }
  }
  if (a === 'conversations') {
    if (parts.length === 2) return { name: 'conversation_list' }
    const id = b === undefined ? undefined : decode(b)
    if (id === undefined) return undefined
    if (parts.length === 3) return { name: 'conversation', id }
    if (parts.length === 4 && c === 'recording') return { name: 'recording', id }
  }
  if (a === 'transcription' && b === 'jobs' && parts.length === 4) {
    const id = decode(c!)
    if (id !== undefined) return { name: 'transcription', id }
  }
  void d
  return undefined
}
