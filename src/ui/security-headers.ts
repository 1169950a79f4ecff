import type { H3Event } from 'h3'

/**
 * Headers for every dashboard response: scripts and styles only from switchboard itself (no inline
 * script, no CDN), no framing, no referrer leaking ids, and no caching of pages that show stored data.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ')

export function setPageHeaders(event: H3Event): void {
  const h = event.res.headers
  h.set('content-security-policy', CONTENT_SECURITY_POLICY)
  h.set('x-content-type-options', 'nosniff')
  h.set('x-frame-options', 'DENY')
  h.set('referrer-policy', 'no-referrer')
  h.set('cache-control', 'no-store')
}
