import { randomBytes } from 'node:crypto'
import { HTTPError, type H3, type H3Event } from 'h3'
import type { Runtime } from '../runtime.ts'
import { adminAccessOf, authenticateAdmin, isHttps, issueSession, sameSecret, SESSION_TTL_MS, sessionCookieHeader } from '../utils/admin-auth.ts'
import { revokeSession } from './session-revocation.ts'
import { field, formOf } from './form.ts'
import { html } from './html.ts'
import { barePage } from './layout.ts'
import { createLoginLimiter, loginClientKey } from './login-limiter.ts'
import { safeNext, seeOther } from './responses.ts'

/**
 * `GET/POST /ui/login` and `POST /ui/logout`. The form carries a one-time value also set as a cookie
 * (double submit), so another site cannot log a browser in with its own token; failed attempts are
 * rate-limited on the runtime's clock.
 */
const LOGIN_COOKIE = 'sb_login'

/**
 * No Path: the browser takes the folder of the login's address, prefix included (`/ui`, or `/ops/switchboard/ui` behind
 * a reverse proxy that serves the dashboard under a path), where a fixed `Path=/ui/login` never matched a prefixed one.
 */
function loginCookie(event: H3Event, value: string, maxAge: number): string {
  return [`${LOGIN_COOKIE}=${value}`, `Max-Age=${maxAge}`, 'HttpOnly', 'SameSite=Strict', ...(isHttps(event) ? ['Secure'] : [])].join('; ')
}

/**
 * Every `sb_login` value the browser sent: it may hold two for a while — one a release before 0.26.0 scoped to
 * `Path=/ui/login`, and this one's — and sends the more specific first.
 */
function loginCookies(event: H3Event): string[] {
  const values: string[] = []
  for (const part of (event.req.headers.get('cookie') ?? '').split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === LOGIN_COOKIE) values.push(part.slice(eq + 1).trim())
  }
  return values
}

function loginForm(event: H3Event, next: string, error?: string): string {
  const nonce = randomBytes(16).toString('base64url')
  event.res.headers.append('set-cookie', loginCookie(event, nonce, 600))
  return barePage(
    event,
    'Log in',
    html`${error ? html`<p class="flash error" role="alert">${error}</p>` : ''}
<form method="post" action="ui/login">
<input type="hidden" name="_login" value="${nonce}">
<input type="hidden" name="next" value="${next}">
<label for="token">Admin token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<small>ADMIN_TOKEN, or the token switchboard generated into DATA_DIR/admin-token (printed once in the start banner).</small>
<button type="submit">Log in</button>
</form>`,
  )
}

export function registerLoginRoutes(app: H3, rt: Runtime): void {
  const limiter = createLoginLimiter(rt.clock)

  app.get('/ui/login', (event) => {
    const next = safeNext(event.url.searchParams.get('next'))
    if (authenticateAdmin(event, rt.config.adminToken, rt.clock.now())) return seeOther(event, next)
    return loginForm(event, next)
  })

  app.post('/ui/login', async (event) => {
    const client = loginClientKey(event)
    const form = await formOf(event).catch((error: unknown) => {
      if (error instanceof HTTPError && error.status === 413) return undefined
      throw error
    })
    if (!form) {
      // Too large to be this form: no attempt to count, the form again with why.
      event.res.status = 413
      return loginForm(event, '/ui', 'That form is too large.')
    }
    const next = safeNext(field(form, 'next'))
    const wait = limiter.retryAfterMs(client)
    if (wait > 0) {
      event.res.status = 429
      event.res.headers.set('retry-after', String(Math.ceil(wait / 1000)))
      return loginForm(event, next, `Too many failed attempts. Try again in ${Math.ceil(wait / 60_000)} min.`)
    }
    const given = field(form, '_login')
    if (!loginCookies(event).some((expected) => expected !== '' && sameSecret(given, expected))) {
      event.res.status = 403
      return loginForm(event, next, 'The form expired. Please try again.')
    }
    const token = rt.config.adminToken
    if (!token || !sameSecret(field(form, 'token'), token)) {
      limiter.recordFailure(client)
      rt.log.warn({ client }, 'dashboard login failed')
      event.res.status = 401
      return loginForm(event, next, 'That token is not right.')
    }
    limiter.recordSuccess(client)
    const { cookie } = issueSession(token, rt.clock.now())
    event.res.headers.append('set-cookie', sessionCookieHeader(event, cookie, Math.floor(SESSION_TTL_MS / 1000)))
    event.res.headers.append('set-cookie', loginCookie(event, '', 0))
    rt.log.info({ client }, 'dashboard login')
    return seeOther(event, next)
  })

  app.post('/ui/logout', async (event) => {
    // Ended on the server too: a copy of the cookie taken before now no longer admits anyone.
    const access = adminAccessOf(event)
    if (access?.via === 'session') await revokeSession(rt, access.session)
    event.res.headers.append('set-cookie', sessionCookieHeader(event, '', 0))
    return seeOther(event, 'ui/login')
  })
}
