import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { renderBanner } from '../../src/server.ts'
import { sameSecret } from '../../src/utils/admin-auth.ts'
import { LOGIN_MAX_PER_CLIENT, LOGIN_MAX_TOTAL, LOGIN_SLOWED_MS, LOGIN_SLOWED_NEW_MS, LOGIN_WINDOW_MS } from '../../src/ui/login-limiter.ts'
import { cookieHeader, cookiesOf, login, startUiServer, TOKEN, type UiServer, redirectedTo } from './helpers.ts'

const RUN = '/admin/recipes/no-answer-followup/run?dry_run=1'

describe('a generated admin token', () => {
  let ui: UiServer
  beforeAll(async () => {
    ui = await startUiServer()
  })
  afterAll(() => ui.close())

  it('is written to DATA_DIR (0600), shown once in a terminal\'s banner with the /ui link, and required everywhere', async () => {
    const file = join(ui.dataDir, 'admin-token')
    expect(existsSync(file)).toBe(true)
    const token = readFileSync(file, 'utf8').trim()
    expect(token.length).toBeGreaterThanOrEqual(32)
    expect(ui.server.rt.config.adminToken).toBe(token)
    const first = renderBanner(ui.server.rt.config, ui.server.url, { adminTokenSource: 'generated', terminal: true })
    expect(first).toContain(`${ui.server.url}/ui`)
    expect(first).toContain(token)
    // Not a terminal (systemd, Docker, a pipe): stdout is a log, so the banner names the file, not the secret.
    const logged = renderBanner(ui.server.rt.config, ui.server.url, { adminTokenSource: 'generated', terminal: false })
    expect(logged).not.toContain(token)
    expect(logged).toContain(`admin token         generated now into ${file}   (not printed: this output is not a terminal)`)
    const later = renderBanner(ui.server.rt.config, ui.server.url, { adminTokenSource: 'file' })
    expect(later).not.toContain(token)
    expect(later).toContain(file)

    // Direct loopback without the token: no longer enough.
    expect((await fetch(`${ui.server.url}/admin/events`)).status).toBe(401)
    expect((await fetch(`${ui.server.url}${RUN}`, { method: 'POST' })).status).toBe(401)
    expect((await fetch(`${ui.server.url}/admin/events`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200)
  })
})

describe('access with ADMIN_TOKEN', () => {
  let ui: UiServer
  let base: string
  beforeAll(async () => {
    ui = await startUiServer({ ADMIN_TOKEN: TOKEN })
    base = ui.server.url
  })
  afterAll(() => ui.close())

  it('a proxied or remote-looking request never gets in without the token (the reported Forwarded → 200)', async () => {
    const variants: Array<Record<string, string>> = [
      { forwarded: 'for=203.0.113.7;proto=https' },
      { 'x-forwarded-for': '203.0.113.7' },
      { 'x-forwarded-host': 'evil.example' },
      { host: 'switchboard.example.com' },
      {},
    ]
    for (const headers of variants) {
      const res = await fetch(`${base}${RUN}`, { method: 'POST', headers })
      expect(res.status, JSON.stringify(headers)).toBe(401)
    }
    const ok = await fetch(`${base}${RUN}`, { method: 'POST', headers: { forwarded: 'for=203.0.113.7', authorization: `Bearer ${TOKEN}` } })
    expect(ok.status).toBe(200)
    expect((await fetch(`${base}${RUN}`, { method: 'POST', headers: { authorization: 'Bearer not-the-token' } })).status).toBe(401)
    // A token of another length is refused without an exception.
    expect((await fetch(`${base}/admin/events`, { headers: { authorization: 'Bearer x' } })).status).toBe(401)
    expect(sameSecret('short', 'a much longer secret value')).toBe(false)
    expect(sameSecret(TOKEN, TOKEN)).toBe(true)
    // The banner says where the token comes from, never the token itself.
    const banner = renderBanner(ui.server.rt.config, base, { adminTokenSource: 'config', terminal: true })
    expect(banner).toContain('admin token         the value of ADMIN_TOKEN')
    expect(banner).not.toContain(TOKEN)
  })

  it('every page redirects to the login without a session; every action answers 401', async () => {
    for (const path of ['/ui', '/ui/events', '/ui/events/evt_1', '/ui/recipes', '/ui/calls', '/ui/campaigns', '/ui/mail', '/ui/destinations', '/ui/destinations/deliveries/d_1']) {
      const res = await fetch(`${base}${path}`, { redirect: 'manual' })
      expect(res.status, path).toBe(303)
      expect(redirectedTo(res)).toBe(`/ui/login?next=${encodeURIComponent(path)}`)
    }
    for (const path of [
      '/ui/events/evt_1/replay', '/ui/events/replay', '/ui/recipes/nightly-batch/run', '/ui/mail/x/resend', '/ui/dnc/add', '/ui/dnc/remove', '/ui/dnc/import', '/ui/logout',
      '/ui/destinations/crm/replay', '/ui/destinations/crm/enable', '/ui/destinations/deliveries/d_1/replay',
    ]) {
      const res = await fetch(`${base}${path}`, { method: 'POST', redirect: 'manual' })
      expect(res.status, path).toBe(401)
    }
    // A browser posting a form after its session expired (it asks for a page) is sent to the login instead.
    const browserForm = await fetch(`${base}/ui/dnc/add`, {
      method: 'POST',
      redirect: 'manual',
      headers: { accept: 'text/html,application/xhtml+xml;q=0.9', 'content-type': 'application/x-www-form-urlencoded' },
      body: 'phone=%2B919876543210',
    })
    expect(browserForm.status).toBe(303)
    expect(redirectedTo(browserForm)).toBe('/ui/login?next=%2Fui')
    // htmx (the overview's polling) gets a 401 that tells it to reload the page it is on, which goes to the login and
    // back to that page — a login address named here would lack a reverse proxy's path prefix.
    const polled = await fetch(`${base}/ui/overview/live`, { headers: { 'hx-request': 'true', 'hx-current-url': `${base}/ui/events?status=dead` } })
    expect(polled.status).toBe(401)
    expect(polled.headers.get('hx-refresh')).toBe('true')
    expect(polled.headers.get('hx-redirect')).toBeNull()
    // Assets and the login form are public; they hold no data.
    expect((await fetch(`${base}/ui/login`)).status).toBe(200)
    expect((await fetch(`${base}/ui/assets/htmx.min.js`)).status).toBe(200)
  })

  it('login issues an HttpOnly, SameSite=Strict session cookie; actions need its CSRF token', async () => {
    const { jar, csrf, res } = await login(base)
    expect(res.status).toBe(303)
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('sb_session='))!
    expect(cookie).toMatch(/HttpOnly/)
    expect(cookie).toMatch(/SameSite=Strict/)
    expect(cookie).not.toMatch(/Secure/)
    expect(csrf).not.toBe('')
    const cookies = cookieHeader(jar)
    expect((await fetch(`${base}/ui`, { headers: { cookie: cookies } })).status).toBe(200)
    expect((await fetch(`${base}/admin/events`, { headers: { cookie: cookies } })).status).toBe(200)
    // A page's own error is a page (escaped), not JSON.
    const missing = await fetch(`${base}/ui/events/${encodeURIComponent('<b>nope</b>')}`, { headers: { cookie: cookies } })
    expect(missing.status).toBe(404)
    expect(missing.headers.get('content-type')).toMatch(/text\/html/)
    expect(await missing.text()).toContain('no webhook event with id &quot;&lt;b&gt;nope&lt;/b&gt;&quot;')

    // Without the CSRF token: 403 (admin JSON routes and dashboard forms alike).
    expect((await fetch(`${base}${RUN}`, { method: 'POST', headers: { cookie: cookies } })).status).toBe(403)
    expect((await fetch(`${base}${RUN}`, { method: 'POST', headers: { cookie: cookies, 'x-csrf-token': 'forged' } })).status).toBe(403)
    const form = { cookie: cookies, 'content-type': 'application/x-www-form-urlencoded' }
    expect((await fetch(`${base}/ui/dnc/add`, { method: 'POST', headers: form, body: 'phone=%2B919876543210', redirect: 'manual' })).status).toBe(403)
    // With it: through.
    expect((await fetch(`${base}${RUN}`, { method: 'POST', headers: { cookie: cookies, 'x-csrf-token': csrf } })).status).toBe(200)

    // A forged or tampered cookie is no session.
    const tampered = cookies.replace(/sb_session=v1\.(\d+)/, (_m, exp: string) => `sb_session=v1.${Number(exp) + 1000}`)
    expect((await fetch(`${base}/admin/events`, { headers: { cookie: tampered } })).status).toBe(401)

    // Logout (a form post carrying _csrf) ends it in this browser.
    const out = await fetch(`${base}/ui/logout`, { method: 'POST', headers: form, body: `_csrf=${encodeURIComponent(csrf)}`, redirect: 'manual' })
    expect(out.status).toBe(303)
    expect(out.headers.getSetCookie().some((c) => c.startsWith('sb_session=;') && /Max-Age=0/.test(c))).toBe(true)
    // ...and on the server: a copy of the cookie taken before the logout admits nobody.
    expect((await fetch(`${base}/admin/events`, { headers: { cookie: cookies } })).status).toBe(401)
    const page = await fetch(`${base}/ui`, { headers: { cookie: cookies }, redirect: 'manual' })
    expect(page.status).toBe(303)
    expect(redirectedTo(page)).toBe('/ui/login?next=%2Fui')
    const loginPage = await fetch(`${base}/ui/login`, { headers: { cookie: cookies }, redirect: 'manual' })
    expect(loginPage.status).toBe(200)
    // Another session of the same token is not affected.
    const other = await login(base)
    expect((await fetch(`${base}/admin/events`, { headers: { cookie: cookieHeader(other.jar) } })).status).toBe(200)
  })

  it('a login link whose return path has characters outside Latin-1 logs in and returns there, percent-encoded', async () => {
    const jar = new Map<string, string>()
    const form = await fetch(`${base}/ui/login?next=${encodeURIComponent('/ui/mail?q=क')}`)
    cookiesOf(form, jar)
    const nonce = /name="_login" value="([^"]+)"/.exec(await form.text())![1]!
    const res = await fetch(`${base}/ui/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookieHeader(jar) },
      body: new URLSearchParams({ _login: nonce, token: TOKEN, next: '/ui/mail?q=क' }).toString(),
    })
    expect(res.status).toBe(303)
    expect(redirectedTo(res)).toBe('/ui/mail?q=%E0%A4%95')
    expect(res.headers.getSetCookie().some((c) => c.startsWith('sb_session='))).toBe(true)
    cookiesOf(res, jar)
    const signedIn = await fetch(`${base}/ui/login?next=${encodeURIComponent('/ui/mail?q=क')}`, { headers: { cookie: cookieHeader(jar) }, redirect: 'manual' })
    expect(signedIn.status).toBe(303)
    expect(redirectedTo(signedIn)).toBe('/ui/mail?q=%E0%A4%95')
  })

  it('behind a proxy that says https, in Forwarded quoted or not, or X-Forwarded-Proto, the session cookie is Secure', async () => {
    for (const headers of [{ forwarded: 'for=203.0.113.9;proto="https"' }, { forwarded: 'for=203.0.113.9;proto=https' }, { 'x-forwarded-proto': 'https' }] as Record<string, string>[]) {
      const { res } = await login(base, TOKEN, headers)
      expect(res.headers.getSetCookie().find((c) => c.startsWith('sb_session=')), JSON.stringify(headers)).toMatch(/; Secure/)
    }
    const { res } = await login(base, TOKEN, { forwarded: 'for=203.0.113.9;proto="http"' })
    expect(res.headers.getSetCookie().find((c) => c.startsWith('sb_session='))).not.toMatch(/Secure/)
  })

  it('sessions expire with the clock', async () => {
    const { jar } = await login(base)
    await ui.clock.advance(12 * 60 * 60 * 1000 + 1)
    const res = await fetch(`${base}/ui`, { headers: { cookie: cookieHeader(jar) }, redirect: 'manual' })
    expect(res.status).toBe(303)
  })

  it('the login form refuses a post without its own cookie (no login CSRF)', async () => {
    const res = await fetch(`${base}/ui/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _login: 'x', token: TOKEN }).toString(),
    })
    expect(res.status).toBe(403)
    expect(res.headers.getSetCookie().some((c) => c.startsWith('sb_session='))).toBe(false)
  })

  it('failed logins are rate-limited per client, and slowed (never locked) for all past the overall limit, on the injected clock', async () => {
    const attempt = async (token: string, client: string) => {
      const jar = new Map<string, string>()
      const form = await fetch(`${base}/ui/login`)
      cookiesOf(form, jar)
      const nonce = /name="_login" value="([^"]+)"/.exec(await form.text())![1]!
      return fetch(`${base}/ui/login`, {
        method: 'POST',
        redirect: 'manual',
        // As a local reverse proxy would say: the client's address appended last.
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookieHeader(jar), 'x-forwarded-for': client },
        body: new URLSearchParams({ _login: nonce, token }).toString(),
      })
    }
    for (let i = 0; i < LOGIN_MAX_PER_CLIENT; i++) expect((await attempt('wrong-token-guess', '198.51.100.1')).status).toBe(401)
    const limited = await attempt(TOKEN, '198.51.100.1')
    expect(limited.status).toBe(429)
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
    // Another client is not locked out by this one.
    expect((await attempt(TOKEN, '198.51.100.2')).status).toBe(303)
    await ui.clock.advance(LOGIN_WINDOW_MS)
    expect((await attempt(TOKEN, '198.51.100.1')).status).toBe(303)

    // A guesser rotating addresses past the overall limit slows every client to one try a minute; it cannot lock
    // the owner out.
    for (let c = 0; c < LOGIN_MAX_TOTAL / LOGIN_MAX_PER_CLIENT; c++) {
      for (let i = 0; i < LOGIN_MAX_PER_CLIENT; i++) expect((await attempt('wrong-token-guess', `203.0.113.${c}`)).status).toBe(401)
    }
    await ui.clock.advance(LOGIN_SLOWED_NEW_MS)
    expect((await attempt('wrong-token-typo', '198.51.100.3')).status).toBe(401)
    const slowed = await attempt(TOKEN, '198.51.100.3')
    expect(slowed.status).toBe(429)
    expect(Number(slowed.headers.get('retry-after'))).toBeLessThanOrEqual(LOGIN_SLOWED_MS / 1000)
    // A new address gets no free try either: those share one every LOGIN_SLOWED_NEW_MS (every address of a guesser's
    // got one, so its guesses were bounded only by the addresses it had).
    const fresh = async (n: number) => attempt('wrong-token-guess', `2001:db8::${n.toString(16)}`)
    const rotating = [await fresh(1), await fresh(2), await fresh(3)]
    expect(rotating.map((r) => r.status)).toEqual([429, 429, 429])
    expect(Number(rotating[0]!.headers.get('retry-after'))).toBe(LOGIN_SLOWED_NEW_MS / 1000)
    await ui.clock.advance(LOGIN_SLOWED_NEW_MS)
    expect((await fresh(4)).status).toBe(401)
    expect((await fresh(5)).status).toBe(429)
    // The owner waits seconds, not the window.
    await ui.clock.advance(LOGIN_SLOWED_NEW_MS)
    expect((await attempt(TOKEN, '198.51.100.4')).status).toBe(303)
    await ui.clock.advance(LOGIN_SLOWED_MS)
    expect((await attempt(TOKEN, '198.51.100.3')).status).toBe(303)
    await ui.clock.advance(LOGIN_WINDOW_MS)
  })

  it('pages carry a CSP without inline scripts; the session secret never appears in a page', async () => {
    const { jar } = await login(base)
    const res = await fetch(`${base}/ui`, { headers: { cookie: cookieHeader(jar) } })
    const csp = res.headers.get('content-security-policy') ?? ''
    expect(csp).toContain("script-src 'self'")
    expect(csp).not.toContain('unsafe-inline')
    const body = await res.text()
    expect(body).not.toContain(TOKEN)
    expect(body).not.toContain('whsec_ui_secret')
    expect(body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/)
  })
})
