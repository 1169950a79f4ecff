import type { H3Event } from 'h3'
import { setResponseHeaders } from '../utils/admin-auth.ts'

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
  // Each page's <base href> leads back to the service's root, whatever path prefix a reverse proxy adds (root-relative.ts).
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ')

const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
}

export function setPageHeaders(event: H3Event): void {
  for (const [name, value] of Object.entries(PAGE_HEADERS)) event.res.headers.set(name, value)
}

/**
 * The page headers on every answer under `/ui`, set before any route runs: h3's own errors (a 404 naming the
 * URL asked for, a body it cannot read) and a route's thrown errors are JSON that would otherwise go out
 * without them. A route may still change one for its own answer (the assets are cached).
 */
export function setUiHeaders(event: H3Event): void {
  setResponseHeaders(event, PAGE_HEADERS)
}
