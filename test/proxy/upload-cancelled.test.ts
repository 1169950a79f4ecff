import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, request as httpRequest, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { upstreamStatus } from '../../src/health/upstream-observation.ts'
import { createApp, startServer, type RunningServer } from '../../src/server.ts'
import { ACME, proxyHarness, type ProxyHarness } from './helpers.ts'

let h: ProxyHarness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

// Every failure of a streamed request was noted as the provider's (no answer → "down"), including a caller hanging up
// in the middle of its own upload: one cancelled batch upload showed the provider down, and /readyz degraded, for a
// minute, though the provider never failed.
it("a caller cancelling its own upload is not held against the provider's health", async () => {
  h = await proxyHarness()
  expect((await h.request('/v1/batch-calls')).status).toBeLessThan(500)
  expect(upstreamStatus(h.rt)).toEqual({ state: 'up' })

  let chunks = 0
  const body = new ReadableStream<Uint8Array>({
    pull(ctl) {
      if (chunks++ < 3) ctl.enqueue(new TextEncoder().encode('x'.repeat(1024)))
      else ctl.error(new Error('client went away'))
    },
  })
  const res = await createApp(h.rt).fetch(
    new Request('http://localhost/v1/batch-calls', {
      method: 'POST',
      headers: { authorization: `Bearer ${ACME}`, 'content-type': 'multipart/form-data; boundary=b' },
      body,
      duplex: 'half',
    } as RequestInit),
  )
  expect(res.status).toBe(400)
  expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/ended before it was whole/)
  expect(upstreamStatus(h.rt)).toEqual({ state: 'up' })
})

let provider: Server | undefined
let server: RunningServer | undefined
let dir: string | undefined
afterEach(async () => {
  await server?.close()
  await new Promise((r) => (provider ? provider.close(r) : r(undefined)))
  provider?.closeAllConnections?.()
  if (dir) rmSync(dir, { recursive: true, force: true })
  server = provider = dir = undefined
})

// When the *provider* drops the connection mid-upload, the pipe cancels the body we read, which aborts request.signal
// too: judged by that signal, a real provider failure was filed as the caller's cancelled upload (400) and never noted
// against the provider's health.
it('a provider that resets the connection mid-upload is noted against its health', async () => {
  provider = createServer((req, res) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[]}')
      return
    }
    let got = 0
    req.on('data', (c: Buffer) => {
      got += c.length
      if (got > 32 * 1024) req.socket.destroy() // the provider goes away mid-upload
    })
  })
  await new Promise<void>((r) => provider!.listen(0, '127.0.0.1', r))
  const base = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`
  dir = mkdtempSync(join(tmpdir(), 'sb-upload-reset-'))
  server = await startServer({
    env: { PORT: '0', HOST: '127.0.0.1', DATA_DIR: dir, WEBHOOK_SECRET: 'whsec_x', LOG_LEVEL: 'silent', RECONCILE_INTERVAL_SECONDS: '0', VOICE_API_KEY: 'sk_live_x', VOICE_API_BASE_URL: base, SWITCHBOARD_CONFIG: 'none', RECIPES_DIR: dir },
    processing: 'inline',
  })
  const status = await new Promise<number>((resolve, reject) => {
    const u = new URL(`${server!.url}/v1/batch-calls`)
    const req = httpRequest(u, { method: 'POST', headers: { authorization: 'Bearer sk_live_x', 'content-type': 'multipart/form-data; boundary=b', 'transfer-encoding': 'chunked' } }, (res) => {
      res.resume()
      resolve(res.statusCode ?? 0)
    })
    req.on('error', () => resolve(-1)) // our socket was destroyed: no answer at all
    let n = 0
    const tick = () => {
      if (n++ > 200 || req.destroyed) return
      req.write(Buffer.alloc(4096, 120), () => setTimeout(tick, 5))
    }
    tick()
    setTimeout(() => reject(new Error('no outcome in 8 s')), 8000)
  })
  expect(status === 502 || status === -1, `status ${status}`).toBe(true)
  expect(upstreamStatus(server.rt).state).toBe('down')
})
