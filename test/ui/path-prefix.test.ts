import type http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchBrowser } from '../helpers/browser.ts'
import { startReverseProxy } from '../helpers/reverse-proxy.ts'
import { cookieHeader, login, redirectedTo, startUiServer, TOKEN, type UiServer } from './helpers.ts'
import { deliver } from './seed.ts'

/**
 * The dashboard served under a path by a reverse proxy on the same host — nginx's
 * `location /ops/switchboard/ { proxy_pass http://127.0.0.1:3000/; }` (the README's "Under a path"), played here by
 * node:http: it strips the prefix and passes the rest on; anything outside the prefix is its own 404. Nothing is
 * configured in switchboard: its pages name no absolute path (src/ui/root-relative.ts).
 */
const PREFIX = '/ops/switchboard'

function startPrefixProxy(upstreamPort: number): Promise<http.Server> {
  return startReverseProxy(upstreamPort, {
    path: (url) => (url.startsWith(`${PREFIX}/`) ? url.slice(PREFIX.length) : undefined),
    headers: (req) => ({ ...req.headers, 'x-forwarded-for': req.socket.remoteAddress ?? '', 'x-forwarded-proto': 'http' }),
  })
}

let ui: UiServer
let proxy: http.Server
/** The dashboard's public root: `http://127.0.0.1:<proxy>/ops/switchboard`. */
let base: string
let origin: string
let eventId: string

beforeAll(async () => {
  ui = await startUiServer({ ADMIN_TOKEN: TOKEN })
  eventId = await deliver(ui.server, ui.clock, { event_id: 'evt_prefix_no_answer', event_type: 'call.no_answer', call: { to_phone: '+919876543215' } })
  proxy = await startPrefixProxy(ui.server.port)
  origin = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
  base = `${origin}${PREFIX}`
})

afterAll(async () => {
  await new Promise((r) => proxy.close(r))
  await ui.close()
})

/** Every URL a page names — links, assets, forms, htmx requests — resolved as the browser does, through its <base href>. */
function urlsOf(page: string, pageUrl: string): { gets: URL[]; posts: URL[] } {
  const from = new URL(/<base href="([^"]*)">/.exec(page)![1]!, pageUrl)
  const gets: URL[] = []
  const posts: URL[] = []
  for (const m of page.matchAll(/<(a|link|script|iframe|form|div)\b[^>]*?\s(href|src|action|hx-get)="([^"]*)"[^>]*>/g)) {
    const url = new URL(m[3]!.replaceAll('&amp;', '&'), from)
    if (m[1] === 'form' && /method="post"/.test(m[0])) posts.push(url)
    else gets.push(url)
  }
  return { gets, posts }
}

describe('the dashboard under a path prefix, nothing configured', () => {
  it('a page asked for without a session goes to the login under the prefix, and the login comes back there', async () => {
    const page = await fetch(`${base}/ui/events?status=dead`, { redirect: 'manual' })
    expect(page.status).toBe(303)
    // Relative to the page asked for: the browser keeps the prefix it sees.
    expect(page.headers.get('location')).toBe('../ui/login?next=%2Fui%2Fevents%3Fstatus%3Ddead')
    expect(new URL(page.headers.get('location')!, page.url).pathname).toBe(`${PREFIX}/ui/login`)
    const { res, jar } = await login(base)
    expect(res.status).toBe(303)
    expect(new URL(res.headers.get('location')!, `${base}/ui/login`).href).toBe(`${base}/ui`)
    // The login form's own cookie takes the folder of the address the browser sees (no fixed Path=/ui/login).
    const form = await fetch(`${base}/ui/login`)
    const set = form.headers.getSetCookie().find((c) => c.startsWith('sb_login='))!
    expect(set).not.toMatch(/Path=/i)
    // A browser that still holds the cookie an earlier release scoped to Path=/ui/login sends both, that one first.
    const nonce = /name="_login" value="([^"]+)"/.exec(await form.text())![1]!
    const both = await fetch(`${base}/ui/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `sb_login=an-earlier-form; ${set.split(';')[0]}` },
      body: new URLSearchParams({ _login: nonce, token: TOKEN, next: '/ui/calls' }).toString(),
    })
    expect(both.status).toBe(303)
    expect(redirectedTo(both)).toBe(`${PREFIX}/ui/calls`)
    expect((await fetch(`${base}/ui`, { headers: { cookie: cookieHeader(jar) } })).status).toBe(200)
  })

  it('every link, asset, form and htmx request of every page stays under the prefix, and every page it links answers', async () => {
    const { jar } = await login(base)
    const cookie = cookieHeader(jar)
    const queue = [`${base}/ui`]
    const seen = new Set<string>(queue)
    const posts = new Set<string>()
    let pages = 0
    while (queue.length > 0 && pages < 80) {
      const url = queue.shift()!
      const res = await fetch(url, { headers: { cookie }, redirect: 'manual' })
      expect(res.status, url).toBe(200)
      if (!/^text\/html/.test(res.headers.get('content-type') ?? '')) continue
      const body = await res.text()
      // A fragment htmx swaps into a page (the overview's live part) is resolved against that page's base, and the
      // page carries the same markup: only whole pages are read for links, and each has its <base href>.
      if (!body.startsWith('<!doctype html>')) continue
      expect(body, url).toMatch(/<base href="(\.\/|(\.\.\/)+)">/)
      pages++
      const found = urlsOf(body, url)
      for (const target of [...found.gets, ...found.posts]) {
        expect(target.origin, `${target.href} on ${url}`).toBe(origin)
        expect(target.pathname.startsWith(`${PREFIX}/`), `${target.href} on ${url}`).toBe(true)
      }
      for (const target of found.posts) posts.add(target.pathname)
      for (const target of found.gets) {
        target.hash = ''
        // The mail preview and the assets are fetched too (200), not crawled further; so are the service's own pages.
        if (!seen.has(target.href)) {
          seen.add(target.href)
          queue.push(target.href)
        }
      }
    }
    expect(pages).toBeGreaterThan(10)
    // The crawl reached every part of the dashboard, an event's own page and its replay form among them.
    const paths = [...seen].map((u) => new URL(u).pathname)
    for (const part of ['/ui/events', '/ui/recipes', '/ui/calls', '/ui/campaigns', '/ui/destinations', '/ui/mail', `/ui/events/${eventId}`, '/ui/overview/live']) {
      expect(paths, part).toContain(`${PREFIX}${part}`)
    }
    expect(paths.some((p) => p.startsWith(`${PREFIX}/ui/assets/`))).toBe(true)
    expect([...posts]).toContain(`${PREFIX}/ui/events/${eventId}/replay`)
    expect([...posts]).toContain(`${PREFIX}/ui/logout`)
  })

  it('an action answers 303 back to its page under the prefix; a page no route has links back under it', async () => {
    const { jar, csrf } = await login(base)
    const replay = await fetch(`${base}/ui/events/${eventId}/replay`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: cookieHeader(jar), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf }).toString(),
    })
    expect(replay.status).toBe(303)
    expect(redirectedTo(replay)).toMatch(new RegExp(`^${PREFIX}/ui/events/${eventId}\\?done=replayed-one`))
    const missing = await fetch(`${base}/ui/no/such/page`, { headers: { cookie: cookieHeader(jar) } })
    expect(missing.status).toBe(404)
    const back = /<a href="([^"]+)">Back to the dashboard<\/a>/.exec(await missing.text())?.[1]
    expect(new URL(back!, missing.url).pathname).toBe(`${PREFIX}/ui`)
  })
})

describe('in a real browser, under the prefix', () => {
  let browser: Browser
  let page: Page

  beforeAll(async () => {
    browser = await launchBrowser()
    page = await browser.newPage({ locale: 'en-US' })
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
  })

  it('logs in, keeps its styles and scripts, and moves between pages without leaving the prefix', async () => {
    const outside: string[] = []
    page.on('request', (request) => {
      if (!new URL(request.url()).pathname.startsWith(`${PREFIX}/`)) outside.push(request.url())
    })
    await page.goto(`${base}/ui/calls`)
    expect(new URL(page.url()).pathname).toBe(`${PREFIX}/ui/login`)
    await page.getByLabel('Admin token').fill(TOKEN)
    await page.getByRole('button', { name: 'Log in' }).click()
    await page.waitForURL(`${base}/ui/calls`)
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Calls')
    // The stylesheets came (pico sets the body's margin to 0) and htmx loaded.
    expect(await page.evaluate(() => getComputedStyle(document.body).margin)).toBe('0px')
    expect(await page.evaluate(() => typeof (window as unknown as { htmx?: unknown }).htmx)).toBe('object')
    await page.getByRole('link', { name: 'Events', exact: true }).click()
    await page.waitForURL(`${base}/ui/events`)
    await page.locator(`a[href="ui/events/${eventId}"]`).click()
    await page.waitForURL(`${base}/ui/events/${eventId}`)
    page.once('dialog', (d) => void d.accept())
    await page.getByRole('button', { name: 'Replay', exact: true }).click()
    await page.waitForURL(/done=replayed-one/)
    expect(new URL(page.url()).pathname).toBe(`${PREFIX}/ui/events/${eventId}`)
    // The overview's live part, asked for by htmx as the page's own address names it.
    await page.getByRole('link', { name: 'Overview' }).click()
    await page.waitForURL(`${base}/ui`)
    const live = page.waitForResponse((r) => new URL(r.url()).pathname === `${PREFIX}/ui/overview/live`)
    await page.evaluate(() => {
      const el = document.getElementById('overview-live')!
      ;(window as unknown as { htmx: { ajax(verb: string, path: string, target: Element): Promise<void> } }).htmx.ajax('GET', el.getAttribute('hx-get')!, el)
    })
    expect((await live).status()).toBe(200)
    await page.getByRole('button', { name: 'Log out' }).click()
    await page.waitForURL(new RegExp(`^${base}/ui/login`))
    expect(outside).toEqual([])
  })
})
