import type http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startReverseProxy } from '../helpers/reverse-proxy.ts'
import { login, startUiServer, TOKEN, type UiServer, cookieHeader, redirectedTo } from './helpers.ts'

/**
 * The README's nginx configuration, played by a reverse proxy built here from node:http (nginx cannot be
 * installed from npm): it sets Host to the public name, appends the client to X-Forwarded-For, and says
 * X-Forwarded-Proto: https — as `proxy_set_header` does in that config. Every request reaches switchboard
 * from loopback, which is exactly why loopback must not mean trusted.
 */
const PUBLIC_HOST = 'switchboard.example.com'

function startNginxLikeProxy(upstreamPort: number): Promise<http.Server> {
  return startReverseProxy(upstreamPort, {
    headers(req) {
      const headers = { ...req.headers }
      headers.host = PUBLIC_HOST // proxy_set_header Host $host;
      const prior = req.headers['x-forwarded-for']
      const client = req.socket.remoteAddress ?? ''
      headers['x-forwarded-for'] = prior ? `${prior}, ${client}` : client // $proxy_add_x_forwarded_for
      headers['x-forwarded-proto'] = 'https' // $scheme (TLS ends at the proxy)
      headers['x-real-ip'] = client // $remote_addr
      return headers
    },
  })
}

let ui: UiServer
let proxy: http.Server
let base: string

beforeAll(async () => {
  ui = await startUiServer({ ADMIN_TOKEN: TOKEN })
  proxy = await startNginxLikeProxy(ui.server.port)
  base = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
})

afterAll(async () => {
  await new Promise((r) => proxy.close(r))
  await ui.close()
})

it('through the proxy: public routes work; admin needs the token; pages need a login', async () => {
  expect((await fetch(`${base}/healthz`)).status).toBe(200)
  const run = await fetch(`${base}/admin/recipes/no-answer-followup/run?dry_run=1`, { method: 'POST' })
  expect(run.status).toBe(401)
  expect((await fetch(`${base}/admin/events`)).status).toBe(401)
  const withToken = await fetch(`${base}/admin/recipes/no-answer-followup/run?dry_run=1`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } })
  expect(withToken.status).toBe(200)
  const page = await fetch(`${base}/ui/events`, { redirect: 'manual' })
  expect(page.status).toBe(303)
  expect(redirectedTo(page)).toMatch(/^\/ui\/login\?next=/)
})

it('through the proxy: the session cookie is Secure (https at the proxy) and the dashboard works', async () => {
  const { res, jar, csrf } = await login(base)
  expect(res.status).toBe(303)
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith('sb_session='))!
  expect(cookie).toMatch(/; Secure/)
  expect(cookie).toMatch(/HttpOnly/)
  expect(cookie).toMatch(/SameSite=Strict/)
  const overview = await fetch(`${base}/ui`, { headers: { cookie: cookieHeader(jar) } })
  expect(overview.status).toBe(200)
  // State changes still need the CSRF token behind the proxy.
  const forged = await fetch(`${base}/admin/recipes/no-answer-followup/run?dry_run=1`, { method: 'POST', headers: { cookie: cookieHeader(jar) } })
  expect(forged.status).toBe(403)
  const real = await fetch(`${base}/admin/recipes/no-answer-followup/run?dry_run=1`, { method: 'POST', headers: { cookie: cookieHeader(jar), 'x-csrf-token': csrf } })
  expect(real.status).toBe(200)
})
