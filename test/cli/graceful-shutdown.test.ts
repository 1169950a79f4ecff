import { once } from 'node:events'
import { randomUUID } from 'node:crypto'
import { Agent, createServer, request as httpRequest } from 'node:http'
import Database from 'better-sqlite3'
import { afterEach, expect, it } from 'vitest'
import { signFormant } from '../../src/webhooks/index.ts'
import { startServe, type ServeChild } from '../helpers/serve-child.ts'

/**
 * SIGTERM answers what the server has started before it exits: a proxied call waiting on the provider, a delivery
 * whose body is still arriving, the requests in progress on every keep-alive connection. (The stop closed every
 * connection at once: each of them was reset, and the provider had to retry its deliveries.)
 */
const SECRET = 'whsec_shutdown_test'
const cleanups: Array<() => unknown> = []
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!()
})
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function serve(env: Record<string, string> = {}): Promise<ServeChild> {
  const child = await startServe({ WEBHOOK_SECRET: SECRET, LOG_LEVEL: 'warn', ...env })
  cleanups.push(() => child.stop())
  return child
}

function webhook(): { id: string; body: string; headers: Record<string, string> } {
  const id = `evt_${randomUUID().replaceAll('-', '').slice(0, 16)}`
  const now = new Date().toISOString()
  const body = JSON.stringify({
    event_id: id, event_type: 'call.completed', timestamp: now,
    data: { call: { agent_id: 101, conversation_id: `${randomUUID()}_1`, trace_id: randomUUID(), status: 'completed', to_phone: '+919876543210', from_phone: '+918035550101', duration_seconds: 30, failure_reason: null, recording_url: null, started_at: now, ended_at: now, call_parameters: { customer_phone: '+919876543210' } }, results: {} },
  })
  return { id, body, headers: { 'content-type': 'application/json', 'x-formantai-signature': signFormant(body, SECRET), 'x-formantai-timestamp': String(Math.floor(Date.now() / 1000)) } }
}

/** A request on a connection of its own: its status, or the socket's error (ECONNRESET, "socket hang up"). */
function rawRequest(url: string, options: { method?: string; path: string; headers?: Record<string, string>; body?: string; bodyLaterMs?: number }): Promise<{ status?: number; error?: string }> {
  return new Promise((resolve) => {
    const req = httpRequest(`${url}${options.path}`, { method: options.method ?? 'GET', headers: options.headers, agent: false }, (res) => {
      res.resume()
      res.on('end', () => resolve({ status: res.statusCode }))
      res.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }))
    })
    req.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }))
    if (options.body !== undefined && options.bodyLaterMs !== undefined) {
      const half = Math.floor(options.body.length / 2)
      req.write(options.body.slice(0, half))
      setTimeout(() => req.end(options.body!.slice(half)), options.bodyLaterMs)
    } else req.end(options.body)
  })
}

it('a proxied read waiting on the provider at SIGTERM is answered, and the service then exits 0', async () => {
  const provider = createServer((req, res) => {
    req.resume()
    setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[],"has_more":false,"total":0}'), 1_500)
  })
  await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r))
  cleanups.push(() => new Promise<void>((r) => (provider.closeAllConnections(), provider.close(() => r()))))
  const sb = await serve({ VOICE_API_KEY: 'sk_live_shutdown', VOICE_API_BASE_URL: `http://127.0.0.1:${(provider.address() as { port: number }).port}` })
  const inFlight = rawRequest(sb.url, { path: '/v1/conversations?limit=1', headers: { authorization: 'Bearer sk_live_shutdown' } })
  await sleep(300)
  const exited = once(sb.child, 'exit')
  sb.child.kill('SIGTERM')
  expect(await inFlight).toEqual({ status: 200 })
  expect((await exited)[0]).toBe(0)
})

// SIGHUP (the terminal running `npm start` closed) ended the process at once: exit 129, the delivery cut, no line.
it.each(['SIGTERM', 'SIGHUP'] as const)('a delivery whose body is still arriving at %s is answered and stored', async (stopSignal) => {
  const sb = await serve()
  const { id, body, headers } = webhook()
  const inFlight = rawRequest(sb.url, { method: 'POST', path: '/webhooks/formant', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, body, bodyLaterMs: 1_000 })
  await sleep(200)
  const exited = once(sb.child, 'exit')
  sb.child.kill(stopSignal)
  expect(await inFlight).toEqual({ status: 204 })
  expect((await exited)[0]).toBe(0)
  const db = new Database(`${sb.dataDir}/switchboard.db`, { readonly: true })
  expect(db.prepare('select count(*) as n from webhook_events where event_id = ?').get(id)).toEqual({ n: 1 })
  db.close()
})

it('under a steady stream on keep-alive connections: every 204 is stored, and no request sent is reset', async () => {
  const sb = await serve()
  // Keep-alive connections, each carrying one request after another (not undici: loaded here it would become the
  // process's global fetch dispatcher for the test files that share this worker).
  const agent = new Agent({ keepAlive: true, maxSockets: 8 })
  cleanups.push(() => agent.destroy())
  const acked: string[] = []
  const errors: string[] = []
  let stop = false
  const post = (body: string, headers: Record<string, string>) =>
    new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${sb.url}/webhooks/formant`, { method: 'POST', agent, headers }, (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
        res.on('error', reject)
      })
      req.on('error', reject)
      req.end(body)
    })
  const sender = async () => {
    while (!stop) {
      const { id, body, headers } = webhook()
      try {
        if ((await post(body, headers)) === 204) acked.push(id)
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message
        // Refused once the listener has closed: the request was never sent.
        if (code === 'ECONNREFUSED') return
        errors.push(code)
      }
      await sleep(2)
    }
  }
  const senders = Array.from({ length: 8 }, sender)
  await sleep(1_000)
  const exited = once(sb.child, 'exit')
  sb.child.kill('SIGTERM')
  expect((await exited)[0]).toBe(0)
  stop = true
  await Promise.all(senders)
  const db = new Database(`${sb.dataDir}/switchboard.db`, { readonly: true })
  const stored = new Set((db.prepare('select event_id from webhook_events').all() as Array<{ event_id: string }>).map((r) => r.event_id))
  db.close()
  expect(acked.length).toBeGreaterThan(50)
  expect(acked.filter((id) => !stored.has(id))).toEqual([])
  expect(errors).toEqual([])
})
