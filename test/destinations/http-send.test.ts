import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createAgents, createCancelGroup, KEPT_RESPONSE_BYTES, MAX_RESPONSE_BYTES, sendOnce, type SendRequest } from '../../src/destinations/http-send.ts'
import { createManualClock } from '../../src/utils/clock.ts'

/**
 * The sender's edges, against real loopback servers: every attempt settles once with a result (never throws),
 * the deadline runs on the injected clock, and what a sink answers is read only so far.
 */
type Respond = (req: http.IncomingMessage, res: http.ServerResponse) => void

const servers: http.Server[] = []
const sockets = new Set<Socket>()
let received = 0
afterEach(async () => {
  for (const s of sockets) s.destroy()
  sockets.clear()
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r))
  received = 0
})

async function serve(respond: Respond): Promise<string> {
  const server = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      received++
      respond(req, res)
    })
  })
  server.on('connection', (s) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  servers.push(server)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
}

function attempt(url: string, extra: Partial<SendRequest> = {}): SendRequest {
  return { url, body: '{"event_id":"evt_1"}', headers: { 'webhook-id': 'msg_1' }, timeoutMs: 5_000, allowHttp: true, allowPrivate: true, followRedirects: 0, clock: createManualClock(), ...extra }
}

describe('sendOnce', () => {
  it('reads the final status after a 1xx, the Retry-After header, and keeps the first KB of the body', async () => {
    const url = await serve((_req, res) => {
      res.writeProcessing()
      res.writeHead(429, { 'retry-after': '7', 'content-type': 'text/plain' }).end('x'.repeat(3000))
    })
    const sent = await sendOnce(attempt(url))
    expect(sent).toMatchObject({ status: 429, retryAfter: '7' })
    expect(sent.error).toBeUndefined()
    expect(sent.response).toBe('x'.repeat(KEPT_RESPONSE_BYTES))
  })

  // The answer was cut to its first KB and then searched: a secret across the cut kept its first part in clear.
  it('a secret echoed across the kept KB is redacted before the answer is cut', async () => {
    const url = await serve((req, res) => res.writeHead(500).end(`${'A'.repeat(KEPT_RESPONSE_BYTES - 20)}key=${String(req.headers['x-api-key'])} and more`))
    const sent = await sendOnce(attempt(url, { headers: { 'webhook-id': 'msg_1', 'x-api-key': 'HDRSECRET_live_0123456789' } }))
    expect(sent.response).toBe(`${'A'.repeat(KEPT_RESPONSE_BYTES - 20)}key=[redacted] and more`.slice(0, KEPT_RESPONSE_BYTES))
    expect(sent.response).not.toContain('HDRSECRET')
  })

  it("a Basic user alone (an API key in the URL's user-info) and a secret echoed JSON-escaped are redacted", async () => {
    const url = await serve((req, res) => {
      const pair = Buffer.from(String(req.headers.authorization).split(' ')[1]!, 'base64').toString()
      res.writeHead(500, { 'content-type': 'application/json' }).end(`user=${pair.split(':')[0]} ${JSON.stringify({ key: req.headers['x-api-key'] }).replaceAll('/', '\\/')}`)
    })
    const withUser = new URL(url)
    withUser.username = 'sk_live_USERONLYKEY987654'
    const sent = await sendOnce(attempt(withUser.href, { headers: { 'webhook-id': 'msg_1', 'x-api-key': 'key"with\\quote/123' } }))
    expect(sent.response).toBe('user=[redacted] {"key":"[redacted]"}')
  })

  it('cuts a body over the limit: the status stands, the attempt says why', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200)
      const chunk = Buffer.alloc(16 * 1024, 'y')
      // Keeps writing well past the limit; the sender stops reading.
      let left = (MAX_RESPONSE_BYTES * 4) / chunk.length
      const more = () => {
        while (left-- > 0) if (!res.write(chunk)) return res.once('drain', more)
        res.end()
      }
      more()
    })
    const sent = await sendOnce(attempt(url))
    expect(sent).toMatchObject({ status: 200, error: `response body over ${MAX_RESPONSE_BYTES} bytes; cut off` })
    expect(sent.response).toHaveLength(KEPT_RESPONSE_BYTES)
  })

  it('a sink that never answers is cut at the deadline on the injected clock', async () => {
    const url = await serve(() => undefined)
    const clock = createManualClock()
    const pending = sendOnce(attempt(url, { clock, timeoutMs: 2_000 }))
    let settled = false
    void pending.then(() => (settled = true))
    await vi.waitFor(() => expect(received).toBe(1))
    await clock.advance(1_999)
    expect(settled).toBe(false)
    await clock.advance(1)
    expect(await pending).toMatchObject({ status: null, error: 'timed out after 2000 ms', response: '' })
  })

  it('a sink that sends its headers and then stalls (slow loris) keeps its status, and is cut at the deadline', async () => {
    let flushed = false
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-length': '100' })
      res.write('partial', () => (flushed = true))
    })
    const clock = createManualClock()
    const pending = sendOnce(attempt(url, { clock, timeoutMs: 2_000 }))
    await vi.waitFor(() => expect(flushed).toBe(true))
    // The status line and the first bytes cross loopback; then the deadline passes on the injected clock.
    await new Promise((r) => setTimeout(r, 50))
    await clock.advance(2_000)
    expect(await pending).toMatchObject({ status: 200, error: 'timed out reading the response after 2000 ms', response: 'partial' })
  })

  it('a cancelled attempt (shutdown) settles at once and says it was aborted', async () => {
    const url = await serve(() => undefined)
    const cancel = createCancelGroup()
    const agents = createAgents(2, true)
    try {
      const pending = sendOnce(attempt(url, { cancel, agents }))
      await vi.waitFor(() => expect(received).toBe(1))
      cancel.cancelAll()
      expect(await pending).toMatchObject({ status: null, error: 'cancelled', aborted: true })
      // A group already cancelled cuts the next attempt before it is sent.
      expect(await sendOnce(attempt(url, { cancel, agents }))).toMatchObject({ status: null, error: 'cancelled', aborted: true })
    } finally {
      await agents.close()
    }
  })

  it('a refused connection is a failed attempt with the reason, never a throw', async () => {
    const url = await serve(() => undefined)
    await new Promise((r) => servers.pop()!.close(r))
    const sent = await sendOnce(attempt(url))
    expect(sent.status).toBeNull()
    expect(sent.error).toMatch(/ECONNREFUSED|connect/)
  })

  it('a redirect to a URL that does not parse is a failed attempt, never a throw', async () => {
    const url = await serve((_req, res) => res.writeHead(307, { location: 'http://[not-an-address' }).end())
    const sent = await sendOnce(attempt(url, { followRedirects: 1 }))
    expect(sent).toMatchObject({ status: 307, error: 'redirect to an invalid URL: http://[not-an-address' })
  })

  it('keeps its connections between attempts on a shared agent', async () => {
    const ports = new Set<number>()
    const url = await serve((req, res) => {
      ports.add(req.socket.remotePort!)
      res.writeHead(204).end()
    })
    const agents = createAgents(1, true)
    try {
      for (let i = 0; i < 5; i++) expect((await sendOnce(attempt(url, { agents }))).status).toBe(204)
      expect(ports.size).toBe(1)
    } finally {
      await agents.close()
    }
  })
})
