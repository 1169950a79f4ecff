import { HTTPError, type H3, type H3Event } from 'h3'
import type { Runtime } from '../runtime.ts'
import { ADMIN_RESPONSE_HEADERS, adminErrorResponse, authenticateAdmin, csrfValid, markSessionEnded, refuseNulInUrl, requireAdmin, setResponseHeaders } from '../utils/admin-auth.ts'
import { isRevoked } from './session-revocation.ts'
import { field, formOf } from './form.ts'
import { html } from './html.ts'
import { page } from './layout.ts'
import { seeOther } from './responses.ts'
import { setUiHeaders } from './security-headers.ts'

const PUBLIC_UI = ['/ui/login', '/ui/assets/']
const SAFE = new Set(['GET', 'HEAD', 'OPTIONS'])

function under(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}/`)
}

/**
 * One gate in front of every `/admin` route and every dashboard page, registered before all routes so a
 * route that forgets its own check is still covered. Requests carry the token (bearer) or a session —
 * never admitted for their address alone, since a reverse proxy on the same host makes every remote
 * client look local. Dashboard pages without a session redirect to the login; everything else is 401.
 * Session requests that change state need the CSRF token: `X-CSRF-Token`, or `_csrf` in a posted form.
 * Every answer under either prefix — refusals, errors and h3's own 404 included — is sent uncached and with
 * nosniff (the dashboard's also with its CSP and no framing).
 */
export function registerAdminGate(app: H3, rt: Runtime): void {
  app.use(async (event: H3Event, next) => {
    const path = event.url.pathname.toLowerCase()
    if (!under(path, '/admin') && !under(path, '/ui')) return next()
    // A session cookie ended by "Log out" admits nobody, on any replica (one lookup, only for cookie requests).
    let access = authenticateAdmin(event, rt.config.adminToken, rt.clock.now())
    if (access?.via === 'session' && !path.startsWith('/ui/assets/') && (await isRevoked(rt, access.session))) {
      markSessionEnded(event)
      access = undefined
    }
    if (under(path, '/admin')) {
      setResponseHeaders(event, ADMIN_RESPONSE_HEADERS)
      try {
        requireAdmin(event, rt.config.adminToken, rt.clock.now())
        refuseNulInUrl(event)
      } catch (error) {
        return adminErrorResponse(error, rt.log)
      }
      return next()
    }
    setUiHeaders(event)
    if (PUBLIC_UI.some((p) => path === p || (p.endsWith('/') && path.startsWith(p)))) return next()
    if (!access) {
      const htmx = event.req.headers.has('hx-request')
      if (SAFE.has(event.req.method) && !htmx) {
        return seeOther(event, `ui/login?next=${encodeURIComponent(event.url.pathname + event.url.search)}`)
      }
      // A form a browser posts after its session expired (it asks for a page) goes to the login, not to a JSON 401.
      // The page it came from is unknown (pages send no Referer): the login returns to the overview.
      if (!htmx && /\btext\/html\b/.test(event.req.headers.get('accept') ?? '')) return seeOther(event, 'ui/login?next=%2Fui')
      // htmx (the overview's polling) is told to reload the page it is on, which then goes to the login and back to it.
      // (A redirect named here would need the page's address as the browser has it, behind a proxy's path prefix.)
      const login = htmx ? { 'hx-refresh': 'true' } : undefined
      throw new HTTPError({ status: 401, message: 'log in at /ui/login (or send Authorization: Bearer $ADMIN_TOKEN)', headers: login })
    }
    try {
      refuseNulInUrl(event)
      // Inside the try: reading the form can refuse it (413, too large), shown like any page's error.
      if (!csrfValid(event, access) && !csrfValid(event, access, field(await formOf(event), '_csrf'))) {
        throw new HTTPError({ status: 403, message: 'CSRF token missing or invalid' })
      }
      return await next()
    } catch (error) {
      // A page's own errors (unknown id, bad filter, a form too large, a missing CSRF token) as a page, not as
      // JSON; server errors go on to onError.
      const status = (error as { status?: number }).status
      if (!(error instanceof HTTPError) || status === undefined || status >= 500 || event.req.headers.has('hx-request')) throw error
      event.res.status = status
      return page(event, { title: status === 404 ? 'Not found' : 'Cannot do that', active: '', body: html`<p class="flash error" role="alert">${error.message}</p><p><a href="ui">Back to the overview</a></p>` })
    }
  })
}
