import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { HTTPError, getCookie, type H3Event } from 'h3'
import type { Clock } from './clock.ts'
import type { Logger } from './logger.ts'
import { serviceErrorResponse } from './service-error.ts'

/**
 * Access to `/admin/*` and the dashboard. There is always a token (ADMIN_TOKEN, or one generated into
 * DATA_DIR at start-up): no request gets in without it, whatever its address — behind a reverse proxy on
 * the same host every remote request arrives from loopback, so the peer address proves nothing.
 *
 * Two ways in:
 * - `Authorization: Bearer <token>` (scripts, curl). No cookie is involved, so no CSRF check is needed.
 * - the dashboard's session cookie, issued by `POST /ui/login` in exchange for the token. Sessions are
 *   stateless (an expiry and a nonce, MAC'd with a key derived from the token), so replicas share them and
 *   changing the token signs everyone out. A cookie-authenticated request that changes state must also
 *   carry the session's CSRF token (`X-CSRF-Token` header or a `_csrf` form field).
 */

export const SESSION_COOKIE = 'sb_session'
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/** Constant-time comparison that never throws on a length mismatch: both sides are hashed first. */
export function sameSecret(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest()
  const hb = createHash('sha256').update(b).digest()
  return timingSafeEqual(ha, hb)
}

function mac(token: string, purpose: string): string {
  // A key per purpose derived from the token, so a session MAC can never pass as a CSRF token.
  return createHmac('sha256', createHash('sha256').update(`switchboard-admin:${token}`).digest()).update(purpose).digest('base64url')
}

export interface AdminSession {
  nonce: string
  expiresAt: number
  /** The CSRF token of this session (forms and the `X-CSRF-Token` header). */
  csrf: string
}

/** A new session's cookie value (and its CSRF token). */
export function issueSession(token: string, now: number): { cookie: string; session: AdminSession } {
  const nonce = randomBytes(16).toString('base64url')
  const expiresAt = now + SESSION_TTL_MS
  const body = `v1.${expiresAt}.${nonce}`
  return { cookie: `${body}.${mac(token, `session.${body}`)}`, session: { nonce, expiresAt, csrf: mac(token, `csrf.${nonce}`) } }
}

/** The session a cookie value stands for, or undefined when it is forged, malformed or expired. */
export function verifySession(token: string, cookie: string | undefined, now: number): AdminSession | undefined {
  if (!cookie) return undefined
  const parts = cookie.split('.')
  if (parts.length !== 4 || parts[0] !== 'v1') return undefined
  const [, expires, nonce, signature] = parts as [string, string, string, string]
  const body = `v1.${expires}.${nonce}`
  if (!sameSecret(signature, mac(token, `session.${body}`))) return undefined
  const expiresAt = Number(expires)
  if (!Number.isFinite(expiresAt) || expiresAt <= now) return undefined
  return { nonce, expiresAt, csrf: mac(token, `csrf.${nonce}`) }
}

/** True when the request came over https (directly, or as a proxy in front of us says). */
export function isHttps(event: H3Event): boolean {
  if (event.url.protocol === 'https:') return true
  const proto = event.req.headers.get('x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase()
  if (proto === 'https') return true
  // RFC 7239 allows the value quoted: proto="https".
  return /(^|[;,\s])proto="?https"?(?=[;,\s]|$)/i.test(event.req.headers.get('forwarded') ?? '')
}

/** `Set-Cookie` for a session (HttpOnly, SameSite=Strict, Secure over https). */
export function sessionCookieHeader(event: H3Event, value: string, maxAgeSeconds: number): string {
  return [`${SESSION_COOKIE}=${value}`, 'Path=/', `Max-Age=${maxAgeSeconds}`, 'HttpOnly', 'SameSite=Strict', ...(isHttps(event) ? ['Secure'] : [])].join('; ')
}

function bearer(event: H3Event): string | undefined {
  const match = /^Bearer\s+(.+)$/i.exec(event.req.headers.get('authorization') ?? '')
  return match ? match[1]!.trim() : undefined
}

export type AdminAccess = { via: 'bearer' } | { via: 'session'; session: AdminSession }

const accessKey = Symbol('admin-access')
const endedKey = Symbol('admin-session-ended')
type WithAccess = { [accessKey]?: AdminAccess; [endedKey]?: true }

/** Marks the request's session as ended by "Log out" (src/ui/session-revocation.ts): its cookie no longer admits it. */
export function markSessionEnded(event: H3Event): void {
  const context = event.context as WithAccess
  context[endedKey] = true
  if (context[accessKey]?.via === 'session') delete context[accessKey]
}

/** How this request was let in (set by `authenticateAdmin`). */
export function adminAccessOf(event: H3Event): AdminAccess | undefined {
  return (event.context as WithAccess)[accessKey]
}

/**
 * Who is asking: a valid bearer token, or a valid session cookie; undefined otherwise. Records the answer
 * on the event for later checks (CSRF, pages showing the CSRF token).
 */
export function authenticateAdmin(event: H3Event, token: string | undefined, now: number): AdminAccess | undefined {
  if (!token) return undefined
  const given = bearer(event)
  let access: AdminAccess | undefined
  if (given !== undefined) access = sameSecret(given, token) ? { via: 'bearer' } : undefined
  else if (!(event.context as WithAccess)[endedKey]) {
    const session = verifySession(token, getCookie(event, SESSION_COOKIE), now)
    if (session) access = { via: 'session', session }
  }
  if (access) (event.context as WithAccess)[accessKey] = access
  return access
}

/** Whether a state-changing request carries its session's CSRF token (`given` from a form field). */
export function csrfValid(event: H3Event, access: AdminAccess, given?: string | null): boolean {
  if (access.via === 'bearer' || SAFE_METHODS.has(event.req.method)) return true
  const value = event.req.headers.get('x-csrf-token') ?? given ?? ''
  return value !== '' && sameSecret(value, access.session.csrf)
}

/**
 * The `/admin/*` gate: a bearer token or a session, and for a session's POST/PUT/DELETE the CSRF token in
 * `X-CSRF-Token`. 401 without credentials, 403 without the CSRF token. Requests already admitted by the
 * app-wide gate (`createApp`) pass at once; routes mounted on a bare app (tests) accept the bearer token.
 */
export function requireAdmin(event: H3Event, adminToken: string | undefined, now: number = Date.now()): AdminAccess {
  const access = adminAccessOf(event) ?? authenticateAdmin(event, adminToken, now)
  if (!access) {
    throw new HTTPError({
      status: 401,
      message: adminToken
        ? 'admin token required (Authorization: Bearer $ADMIN_TOKEN, or log in at /ui)'
        : 'admin access needs a token: set ADMIN_TOKEN (switchboard serve generates one in DATA_DIR)',
    })
  }
  if (!csrfValid(event, access)) throw new HTTPError({ status: 403, message: 'CSRF token missing or invalid (send X-CSRF-Token)' })
  return access
}

/**
 * Headers on every `/admin/*` answer, errors included: the bodies carry stored data (events, numbers,
 * deliveries) and a browser holding the session cookie can fetch them, so no cache may keep them and no
 * browser may read them as anything but the JSON they are.
 */
export const ADMIN_RESPONSE_HEADERS: Readonly<Record<string, string>> = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' }

/** Puts `headers` on whatever this request is answered with: h3 uses `res.headers` for a value, `res.errHeaders` for an error or a 4xx/5xx Response. */
export function setResponseHeaders(event: H3Event, headers: Readonly<Record<string, string>>): void {
  for (const [name, value] of Object.entries(headers)) {
    event.res.headers.set(name, value)
    event.res.errHeaders.set(name, value)
  }
}

/** The error `type` of each status an admin route answers (the body shape is the provider's, as everywhere). */
/**
 * Refuses (400) a NUL character (`%00`) in the path or the query string: no id, name or filter has one, and
 * Postgres refuses it in text, so it is the client's mistake rather than a failed query (500).
 */
export function refuseNulInUrl(event: H3Event): void {
  if (/%00/i.test(event.url.pathname) || /%00|\0/.test(event.url.search)) throw new HTTPError({ status: 400, message: 'a NUL character (%00) is not allowed in the URL' })
}

/**
 * An admin error in the service's one error shape, `{"error": {"message", "type"}}` (the proxy, the receiver
 * and the sandbox answer the same), instead of h3's own `{status, message}` body. Unexpected errors are
 * logged and answered without their details.
 */
export function adminErrorResponse(error: unknown, log: Pick<Logger, 'error'>): Response {
  const known = HTTPError.isError(error)
  const status = known ? error.status : 500
  if (!known) log.error({ err: error }, 'admin route failed')
  const message = known ? error.message : 'internal error (see the service log)'
  return serviceErrorResponse(status, message, { ...(known ? Object.fromEntries(error.headers ?? []) : {}), ...ADMIN_RESPONSE_HEADERS })
}

/**
 * Wraps an `/admin/*` handler: checks the admin rules first, answers every error with `adminErrorResponse`, and
 * sends `ADMIN_RESPONSE_HEADERS` (also where the route is mounted without the app-wide gate, as in tests).
 */
export function adminRoute<T>(rt: { config: { adminToken: string | undefined }; log: Logger; clock: Pick<Clock, 'now'> }, handler: (event: H3Event) => Promise<T> | T) {
  return async (event: H3Event): Promise<T | Response> => {
    setResponseHeaders(event, ADMIN_RESPONSE_HEADERS)
    try {
      // Read per request: tests and the dashboard may change the runtime's config after start-up.
      requireAdmin(event, rt.config.adminToken, rt.clock.now())
      refuseNulInUrl(event)
      return await handler(event)
    } catch (error) {
      return adminErrorResponse(error, rt.log)
    }
  }
}
