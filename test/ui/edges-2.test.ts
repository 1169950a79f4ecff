import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { startDeliveryWorker, type DeliveryWorker } from '../../src/destinations/worker.ts'
import { CONTENT_SECURITY_POLICY } from '../../src/ui/security-headers.ts'
import { drainDue } from '../../src/webhooks/processing.ts'
import { destination, startSink, WAIT, type Sink } from '../destinations/helpers.ts'
import { cookieHeader, login, startUiServer, TOKEN, type UiServer, redirectedTo } from './helpers.ts'
import { deliver } from './seed.ts'

/**
 * Dashboard edges: form bodies have a size limit, a destination URL's credentials are never shown, asset names
 * that are Object.prototype keys, bad filters on /ui/calls, and the security headers of fragments and frames.
 */
const KEY = 'sk_live_abc'
let ui: UiServer
let base: string
let sink: Sink
let worker: DeliveryWorker
let session: { jar: Map<string, string>; csrf: string }

beforeAll(async () => {
  sink = await startSink((_n, _req, res) => res.writeHead(410).end())
  ui = await startUiServer({
    ADMIN_TOKEN: TOKEN,
    ALLOW_PRIVATE_DESTINATIONS: '1',
    // The API key is the user part: sent as Basic auth, so it is a secret like a password.
    DESTINATIONS: JSON.stringify([destination(sink.url.replace('http://', `http://${KEY}@`))]),
  })
  base = ui.server.url
  session = await login(base)
}, 60_000)

afterAll(async () => {
  await worker?.stop()
  await ui?.close()
  await sink?.close()
})

const authed = (headers: Record<string, string> = {}) => ({ cookie: cookieHeader(session.jar), ...headers })
const urlencoded = { 'content-type': 'application/x-www-form-urlencoded' }

/** A body of `total` bytes in 16 KB chunks, counting what the server pulled; `total` Infinity never ends. */
function counted(total: number): { stream: ReadableStream<Uint8Array>; pulled(): number } {
  let pulled = 0
  const chunk = new TextEncoder().encode('a'.repeat(16 * 1024))
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled >= total) return controller.close()
      pulled += chunk.byteLength
      controller.enqueue(chunk)
    },
  }, { highWaterMark: 0 })
  return { stream, pulled: () => pulled }
}

describe('posted forms have a size limit', () => {
  it('the public login refuses a form over 64 KB with 413 — by Content-Length, or counted while reading', async () => {
    const declared = await fetch(`${base}/ui/login`, { method: 'POST', headers: urlencoded, body: `token=${'a'.repeat(100 * 1024)}`, redirect: 'manual' })
    expect(declared.status).toBe(413)
    const page = await declared.text()
    expect(page).toContain('That form is too large.')
    expect(page).toContain('action="ui/login"')
    expect(declared.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY)
    expect(declared.headers.get('connection')).toBe('close')

    // Chunked, no Content-Length, over a real socket.
    const body = counted(1024 * 1024)
    const chunked = await fetch(`${base}/ui/login`, { method: 'POST', headers: urlencoded, body: body.stream, duplex: 'half', redirect: 'manual' } as RequestInit)
    expect(chunked.status).toBe(413)

    // A body that never ends: reading stops just past the limit.
    const endless = counted(Infinity)
    const res = await ui.server.app.fetch(new Request(`${base}/ui/login`, { method: 'POST', headers: urlencoded, body: endless.stream, duplex: 'half' } as RequestInit))
    expect(res.status).toBe(413)
    expect(endless.pulled()).toBeLessThanOrEqual(128 * 1024)
  })

  it('a signed-in form over 64 KB is a 413 page (the gate reads it for _csrf)', async () => {
    const res = await fetch(`${base}/ui/dnc/add`, {
      method: 'POST', redirect: 'manual', headers: authed(urlencoded),
      body: new URLSearchParams({ _csrf: session.csrf, phone: '+919876543210', reason: 'x'.repeat(70 * 1024) }).toString(),
    })
    expect(res.status).toBe(413)
    const page = await res.text()
    expect(page).toContain('<h1>Cannot do that</h1>')
    expect(page).toContain('the form is larger than 64 KB')
    // The rest of the body was never read, so the connection is not reused (the next request would meet a reset).
    expect(res.headers.get('connection')).toBe('close')
    // From htmx (CSRF token in the header, the form read by the route): the same 413, as htmx's errors are.
    const hx = await fetch(`${base}/ui/dnc/add`, {
      method: 'POST', redirect: 'manual', headers: authed({ ...urlencoded, 'hx-request': 'true', 'x-csrf-token': session.csrf }),
      body: new URLSearchParams({ phone: '+919876543210', reason: 'x'.repeat(70 * 1024) }).toString(),
    })
    expect(hx.status).toBe(413)
    expect(await hx.json()).toEqual({ error: { type: 'invalid_request', message: 'the form is larger than 64 KB' } })
    expect(hx.headers.get('connection')).toBe('close')
    // Under the limit it still works.
    const ok = await fetch(`${base}/ui/dnc/add`, {
      method: 'POST', redirect: 'manual', headers: authed(urlencoded),
      body: new URLSearchParams({ _csrf: session.csrf, phone: '+919876543210', reason: 'x'.repeat(1024) }).toString(),
    })
    expect(ok.status).toBe(303)
  })

  it('the DNC import takes a CSV of megabytes, and refuses a form beyond its 5 MB', async () => {
    const csv = (bytes: number) => {
      const form = new FormData()
      form.set('_csrf', session.csrf)
      const line = '+919876543210,opted out\n'
      form.set('file', new Blob([line.repeat(Math.ceil(bytes / line.length))], { type: 'text/csv' }), 'list.csv')
      return form
    }
    const big = await fetch(`${base}/ui/dnc/import`, { method: 'POST', redirect: 'manual', headers: authed(), body: csv(1024 * 1024) })
    // Answered 303 to the mail page, the counts in its notice.
    expect(big.status).toBe(303)
    expect(redirectedTo(big)).toMatch(/^\/ui\/mail\?done=dnc-imported&n=\d+&e=\d+&x=0$/)
    const tooBig = await fetch(`${base}/ui/dnc/import`, { method: 'POST', redirect: 'manual', headers: authed(), body: csv(6 * 1024 * 1024) })
    expect(tooBig.status).toBe(413)
    expect(await tooBig.text()).toContain('the form is larger than 5 MB')
  })

  it('the DNC import reads a UTF-16 export (Excel\'s "Unicode Text") and refuses a workbook with the reason', async () => {
    const upload = (bytes: Buffer, name: string) => {
      const form = new FormData()
      form.set('_csrf', session.csrf)
      form.set('file', new Blob([new Uint8Array(bytes)]), name)
      return fetch(`${base}/ui/dnc/import`, { method: 'POST', redirect: 'manual', headers: authed(), body: form })
    }
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('phone\treason\r\n+919876500001\topted out\r\n+919876500002\tasked\r\n', 'utf16le')])
    const ok = await upload(utf16, 'dnc.txt')
    expect(ok.status).toBe(303)
    expect(redirectedTo(ok)).toBe('/ui/mail?done=dnc-imported&n=2&e=0&x=0')
    const workbook = await upload(Buffer.concat([Buffer.from('PK\x03\x04'), Buffer.alloc(64)]), 'dnc.xlsx')
    expect(workbook.status).toBe(400)
    expect(await workbook.text()).toContain('it looks like a ZIP archive')
  })

  it('a body that is not a form still reads as an empty one', async () => {
    const res = await fetch(`${base}/ui/login`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'multipart/form-data; boundary=x' }, body: 'not multipart' })
    expect(res.status).toBe(403)
    expect(await res.text()).toContain('The form expired.')
  })
})

describe('a destination URL\'s credentials', () => {
  it('are never shown: not on /ui/destinations, not in /admin/destinations, not in the reason a 410 leaves', async () => {
    await deliver(ui.server, ui.clock, { event_type: 'call.completed' })
    await drainDue(ui.server.rt)
    worker = startDeliveryWorker(ui.server.rt)
    const admin = async () => {
      const res = await fetch(`${base}/admin/destinations`, { headers: { authorization: `Bearer ${TOKEN}` } })
      return (await res.json()) as { data: Array<{ url: string; state: string; disabled_reason: string | null }> }
    }
    await vi.waitFor(async () => expect((await admin()).data[0]!.state).toBe('disabled'), WAIT)
    const shown = sink.url.replace('http://', 'http://***@')
    const listed = await admin()
    expect(listed.data[0]!.url).toBe(shown)
    expect(listed.data[0]!.disabled_reason).toBe(`410 Gone from ${shown}`)
    expect(JSON.stringify(listed)).not.toContain(KEY)
    const page = await (await fetch(`${base}/ui/destinations`, { headers: authed() })).text()
    expect(page).toContain('http://***@127.0.0.1')
    expect(page).not.toContain(KEY)
  })
})

describe('dashboard routes answer bad input as 4xx, not 500', () => {
  it('an asset named like an Object.prototype key is a 404', async () => {
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf']) {
      expect((await fetch(`${base}/ui/assets/${name}`)).status, name).toBe(404)
    }
    expect((await fetch(`${base}/ui/assets/app.js`)).status).toBe(200)
  })

  it('/ui/calls and /ui/destinations with an unknown status or an over-long filter are a 400 page', async () => {
    for (const path of ['/ui/calls?status=bogus', `/ui/calls?recipe=${'r'.repeat(1_001)}`, '/ui/destinations?status=bogus']) {
      const res = await fetch(`${base}${path}`, { headers: authed() })
      expect(res.status, path).toBe(400)
      expect(await res.text()).toContain('<h1>Cannot do that</h1>')
    }
    expect((await fetch(`${base}/ui/calls?status=queued`, { headers: authed() })).status).toBe(200)
    // A day the campaigns page cannot read falls back to today, by design (and says so).
    expect((await fetch(`${base}/ui/campaigns?date=bogus`, { headers: authed() })).status).toBe(200)
  })
})

describe('security headers on what is not a whole page', () => {
  it('the overview\'s live fragment has a page\'s headers; the report preview may be framed by the dashboard only', async () => {
    const live = await fetch(`${base}/ui/overview/live`, { headers: authed({ 'hx-request': 'true' }) })
    expect(live.status).toBe(200)
    expect(live.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY)
    expect(live.headers.get('x-frame-options')).toBe('DENY')
    expect(live.headers.get('x-content-type-options')).toBe('nosniff')
    expect(live.headers.get('referrer-policy')).toBe('no-referrer')
    expect(live.headers.get('cache-control')).toBe('no-store')

    const preview = await fetch(`${base}/ui/mail/preview?date=2026-03-01`, { headers: authed() })
    expect(preview.status).toBe(200)
    expect(preview.headers.get('content-security-policy')).toContain("frame-ancestors 'self'")
    expect(preview.headers.get('x-frame-options')).toBe('SAMEORIGIN')
    expect(preview.headers.get('x-content-type-options')).toBe('nosniff')
    expect(preview.headers.get('referrer-policy')).toBe('no-referrer')
  })
})
