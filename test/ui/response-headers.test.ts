import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CONTENT_SECURITY_POLICY } from '../../src/ui/security-headers.ts'
import { cookieHeader, login, startUiServer, TOKEN, type UiServer } from './helpers.ts'

/**
 * Every answer under /admin and /ui — success, the service's own errors, a path no route answers, refusals — is kept out of
 * caches and never sniffed: they carry stored data, and a browser with the session cookie can fetch them.
 */
describe('headers on every /admin and /ui answer', () => {
  let ui: UiServer
  let base: string
  let cookie: string
  let csrf: string
  beforeAll(async () => {
    ui = await startUiServer({ ADMIN_TOKEN: TOKEN })
    base = ui.server.url
    const session = await login(base)
    cookie = cookieHeader(session.jar)
    csrf = session.csrf
  })
  afterAll(() => ui.close())

  const bearer = { authorization: `Bearer ${TOKEN}` }

  function expectPrivate(res: Response, what: string): void {
    expect(res.headers.get('cache-control'), `${what}: cache-control`).toBe('no-store')
    expect(res.headers.get('x-content-type-options'), `${what}: nosniff`).toBe('nosniff')
  }

  function expectPageHeaders(res: Response, what: string): void {
    expectPrivate(res, what)
    expect(res.headers.get('content-security-policy'), `${what}: CSP`).toBe(CONTENT_SECURITY_POLICY)
    expect(res.headers.get('x-frame-options'), `${what}: framing`).toBe('DENY')
  }

  it('/admin: success, 400, 404 (the route\'s and h3\'s), 401 and 403', async () => {
    const cases: Array<[string, RequestInit, number]> = [
      ['/admin/events', { headers: bearer }, 200],
      ['/admin/events', { headers: { cookie } }, 200],
      ['/admin/recipes', { headers: bearer }, 200],
      ['/admin/events?status=weird', { headers: bearer }, 400],
      ['/admin/events/evt_nope', { headers: bearer }, 404],
      ['/admin/no-such-route', { headers: bearer }, 404],
      ['/admin/events', {}, 401],
      ['/admin/events', { headers: { authorization: 'Bearer wrong-token-wrong-token' } }, 401],
      // A session's POST without its CSRF token.
      ['/admin/events/evt_nope/replay', { method: 'POST', headers: { cookie } }, 403],
    ]
    for (const [path, init, status] of cases) {
      const res = await fetch(`${base}${path}`, { ...init, redirect: 'manual' })
      expect(res.status, `${init.method ?? 'GET'} ${path}`).toBe(status)
      expectPrivate(res, `${init.method ?? 'GET'} ${path} → ${status}`)
      await res.arrayBuffer()
    }
  })

  it('/ui: pages, the no-route 404, thrown errors, the login redirect, 401, 403 and 429', async () => {
    const page = await fetch(`${base}/ui/events`, { headers: { cookie } })
    expect(page.status).toBe(200)
    expectPageHeaders(page, 'a page')
    await page.text()

    // A path h3 cannot decode is refused (400) before any middleware runs: in the service's error shape, and under /ui
    // with the page headers every /ui answer has (h3's own answer had neither).
    for (const path of ['/ui/%zz', '/admin/%zz', '/ui/events/%E0%A4']) {
      const malformed = await fetch(`${base}${path}`, { headers: { cookie } })
      expect(malformed.status, path).toBe(400)
      expectPrivate(malformed, `${path} → 400`)
      if (path.startsWith('/ui')) expectPageHeaders(malformed, `${path} → 400`)
      expect(await malformed.json(), path).toEqual({ error: { type: 'invalid_request', message: `malformed path: ${path} is not valid percent-encoded UTF-8` } })
    }

    const missing = await fetch(`${base}/ui/no-such-page?x=<b>`, { headers: { cookie } })
    expect(missing.status).toBe(404)
    expectPageHeaders(missing, 'no-route 404')
    await missing.text()

    // An htmx request gets the error as thrown (JSON), not as a page: here a missing CSRF token.
    const htmx = await fetch(`${base}/ui/events/evt_nope/replay`, { method: 'POST', headers: { cookie, 'hx-request': 'true' } })
    expect(htmx.status).toBe(403)
    expectPageHeaders(htmx, 'htmx 403')
    await htmx.text()

    const noSession = await fetch(`${base}/ui/events/evt_nope/replay`, { method: 'POST', headers: { 'x-csrf-token': csrf } })
    expect(noSession.status).toBe(401)
    expectPageHeaders(noSession, '401')
    await noSession.text()

    const redirect = await fetch(`${base}/ui/events`, { redirect: 'manual' })
    expect(redirect.status).toBe(303)
    expectPageHeaders(redirect, 'login redirect')

    // The assets keep their own caching, and are never sniffed either.
    const asset = await fetch(`${base}/ui/assets/app.css`)
    expect(asset.status).toBe(200)
    expect(asset.headers.get('cache-control')).toBe('public, max-age=86400')
    expect(asset.headers.get('x-content-type-options')).toBe('nosniff')
    await asset.text()
    const noAsset = await fetch(`${base}/ui/assets/nope.js`)
    expect(noAsset.status).toBe(404)
    expectPageHeaders(noAsset, 'missing asset')
    await noAsset.text()

    // The login's own refusals, up to 429 after too many failures.
    const client = { 'x-forwarded-for': '198.51.100.9' }
    let last: Response | undefined
    for (let i = 0; i < 12; i++) {
      const form = await fetch(`${base}/ui/login`, { headers: client })
      const jar = form.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ')
      const nonce = /name="_login" value="([^"]+)"/.exec(await form.text())?.[1] ?? ''
      last = await fetch(`${base}/ui/login`, {
        method: 'POST',
        redirect: 'manual',
        headers: { ...client, cookie: jar, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ _login: nonce, token: 'wrong-token-wrong-token', next: '/ui' }).toString(),
      })
      expectPageHeaders(last, `login attempt ${i + 1} → ${last.status}`)
      await last.text()
    }
    expect(last!.status).toBe(429)
  })
})
