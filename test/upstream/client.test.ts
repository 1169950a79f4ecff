import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import http from 'node:http'
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net'
import { H3, serve } from 'h3'
import { createVoiceClient, unansweredCause, type AttemptOutcome } from '../../src/upstream/client.ts'
import { isVoiceApiError, type VoiceApiError } from '../../src/upstream/errors.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { createSeededRandom } from '../../src/utils/random.ts'
import { freePort } from '../helpers/free-port.ts'

/**
 * The client's own behaviour against a scripted upstream on loopback: which requests it repeats, with
 * which key, and how errors come back typed. (The contract suite drives it against the sandbox.)
 */
const seen: Array<{ path: string; key?: string; auth: string | null }> = []
let script: Array<() => Response | Promise<Response>> = []
const upstream = new H3().all('/**', async (event) => {
  const body = event.req.method === 'POST' && event.req.headers.get('content-type')?.includes('json') ? ((await event.req.json()) as { idempotency_key?: string }) : undefined
  seen.push({ path: event.url.pathname, key: body?.idempotency_key, auth: event.req.headers.get('authorization') })
  const next = script.shift()
  return next ? next() : new Response('{}', { status: 418 })
})
const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  () => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } })
/** An attempt the provider carries out but whose answer never comes (the client's deadline ends it). */
const stall = () => new Promise<Response>(() => {})
const duplicate = json(409, { error: { message: 'idempotency key already used', type: 'duplicate_request' } })
const ok = json(200, { data: { agent_id: 101, conversation_id: null, scheduled_for: null, status: 'initiated', trace_id: 'c0a8012e-7d4b-4d7e-9f4a-1b2c3d4e5f60' } })

let server: ReturnType<typeof serve>
let baseUrl: string
beforeAll(async () => {
  server = serve(upstream, { port: 0, hostname: '127.0.0.1', silent: true })
  await server.ready()
  baseUrl = server.url!.replace(/\/$/, '')
})
afterAll(() => server.close(true))

async function run<T>(fn: () => Promise<T>, clock: ReturnType<typeof createManualClock>): Promise<T> {
  // Let backoff timers fire without real waiting: keep the clock moving until the call settles (each
  // attempt is a real HTTP exchange, so a fixed number of advances could pass before a retry is armed).
  let settled = false
  const promise = fn().finally(() => {
    settled = true
  })
  while (!settled) {
    await clock.advance(20_000)
    await new Promise((resolve) => setImmediate(resolve))
  }
  return promise
}

describe('voice client', () => {
  const make = (extra = {}) => {
    const clock = createManualClock()
    return { clock, client: createVoiceClient({ apiKey: 'sk_test_acme', baseUrl: `${baseUrl}/v1/`, clock, random: createSeededRandom(3), ...extra }) }
  }

  it('strips a trailing /v1 from the base URL and sends the bearer key', async () => {
    seen.length = 0
    script = [ok]
    const { client, clock } = make()
    const call = await run(() => client.createCall({ agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543210' }] }), clock)
    expect(call.status).toBe('initiated')
    expect(seen[0]).toMatchObject({ path: '/v1/call', auth: 'Bearer sk_test_acme' })
  })

  it('retries call creation on 500 with the same, generated idempotency key', async () => {
    seen.length = 0
    script = [json(500, { error: { message: 'boom', type: 'internal_error' } }), json(502, 'bad gateway'), ok]
    const { client, clock } = make()
    await run(() => client.createCall({ agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543210' }] }), clock)
    expect(seen).toHaveLength(3)
    expect(seen[0]!.key).toMatch(/^[0-9a-f-]{36}$/)
    expect(new Set(seen.map((s) => s.key)).size).toBe(1)
  })

  it('does not retry call creation without a key when told not to add one', async () => {
    seen.length = 0
    script = [json(500, { error: { message: 'boom', type: 'internal_error' } }), ok]
    const { client, clock } = make({ idempotency: 'never' })
    const error = await run(() => client.createCall({ agent_id: 101, parameters: [] }).catch((e: unknown) => e), clock)
    expect(isVoiceApiError(error)).toBe(true)
    expect(seen).toHaveLength(1)
  })

  it('returns the concurrency 429 as a typed error with current_calls and max_calls, not retried without Retry-After', async () => {
    seen.length = 0
    // A provider on the test's clock says so in its Date (the server's own would be today's, and the reset read against it).
    script = [json(429, { error: { message: 'concurrent call limit reached. 10 simultaneous calls allowed.', type: 'concurrent_call_limit_exceeded', current_calls: 10, max_calls: 10 } }, { date: 'Thu, 01 Jan 2026 00:00:00 GMT', 'x-ratelimit-limit': '50', 'x-ratelimit-remaining': '48', 'x-ratelimit-reset': '2026-03-18T20:54:00+00:00' })]
    const { client, clock } = make()
    const error = (await run(() => client.createCall({ agent_id: 101, parameters: [{ name: 'customer_phone', value: '1' }] }).catch((e: unknown) => e), clock)) as VoiceApiError
    expect(error.type).toBe('concurrent_call_limit_exceeded')
    expect(error.status).toBe(429)
    expect(error.currentCalls).toBe(10)
    expect(error.maxCalls).toBe(10)
    expect(error.rateLimit).toEqual({ limit: 50, remaining: 48, reset: '2026-03-18T20:54:00+00:00', resetAt: expect.any(Number), retryAfter: undefined })
    // On this machine's clock: the reset, moved by however far the test's clock had run when the answer came.
    expect(Math.abs(error.rateLimit.resetAt! - Date.parse('2026-03-18T20:54:00Z'))).toBeLessThan(120_000)
    // Reset is in 2026-03 and the manual clock in 2026-01: the wait is too long, so it is returned, not retried.
    expect(seen).toHaveLength(1)
  })

  it('waits for Retry-After on a 429 and then succeeds', async () => {
    seen.length = 0
    script = [json(429, { error: { message: 'rate limit exceeded', type: 'rate_limit_exceeded' } }, { 'retry-after': '2' }), json(200, { data: [], has_more: false, total: 0 })]
    const { client, clock } = make()
    const list = await run(() => client.listConversations({ limit: 5 }), clock)
    expect(list.total).toBe(0)
    expect(seen).toHaveLength(2)
  })

  it.each([400, 401, 404])('never retries %i', async (status) => {
    seen.length = 0
    script = [json(status, { error: { message: 'nope', type: 'x' } }), ok]
    const { client, clock } = make()
    const error = (await run(() => client.getConversation('x_1').catch((e: unknown) => e), clock)) as VoiceApiError
    expect(error.status).toBe(status)
    expect(seen).toHaveLength(1)
  })

  it('reports an unreachable upstream as a typed network_error after bounded retries', async () => {
    const clock = createManualClock()
    const client = createVoiceClient({ apiKey: 'k', baseUrl: 'http://127.0.0.1:9', clock, random: createSeededRandom(1) })
    const error = (await run(() => client.getBatch(1).catch((e: unknown) => e), clock)) as VoiceApiError
    expect(error.type).toBe('network_error')
    expect(error.status).toBe(0)
  })

  it('rejects a response that does not match the schema as invalid_response', async () => {
    script = [json(200, { data: { nope: true } })]
    const { client, clock } = make()
    const error = (await run(() => client.getBatch(7).catch((e: unknown) => e), clock)) as VoiceApiError
    expect(error.type).toBe('invalid_response')
  })

  // A retry that meets its own lost attempt: the provider's 409 means the call exists, not that the request failed.
  it.each([
    ['a 5xx', json(500, { error: { message: 'boom', type: 'internal_error' } }), {}, 'internal_error'],
    ['a timeout', stall, { timeoutMs: 100 }, 'timeout'],
  ])('a retry answered 409 duplicate_request after %s rejects as placedEarlier, with the same generated key', async (_what, first, extra, lostType) => {
    seen.length = 0
    script = [first, duplicate, ok]
    const { client, clock } = make(extra)
    const error = (await run(() => client.createCall({ agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543210' }] }).catch((e: unknown) => e), clock)) as VoiceApiError
    expect(isVoiceApiError(error)).toBe(true)
    expect(error.placedEarlier).toBe(true)
    expect(error.type).toBe('duplicate_request')
    expect(error.status).toBe(409)
    expect(error.message).toMatch(/most likely placed by an earlier attempt.*Do not place it again with a new key/)
    expect((error.cause as VoiceApiError).type).toBe(lostType)
    expect(seen).toHaveLength(2)
    expect(seen[1]!.key).toBe(seen[0]!.key)
  })

  it('a call-creation error carries its key, and mayHaveBeenPlaced when a lost attempt was not settled (a 429 after a 5xx)', async () => {
    const request = { agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543210' }] }
    const limited = json(429, { error: { message: 'rate limit exceeded', type: 'rate_limit_exceeded' } }, { 'retry-after': '120' })
    // The first attempt placed the call and its answer was lost; the retry waits on a 429 longer than the client waits.
    seen.length = 0
    script = [json(503, 'unavailable'), limited]
    const after = make()
    const unsure = (await run(() => after.client.createCall(request).catch((e: unknown) => e), after.clock)) as VoiceApiError
    expect(unsure).toMatchObject({ type: 'rate_limit_exceeded', status: 429, placedEarlier: false, mayHaveBeenPlaced: true })
    expect(unsure.idempotencyKey).toBe(seen[0]!.key)
    expect(seen.map((s) => s.key)).toEqual([seen[0]!.key, seen[0]!.key])
    expect(unsure.message).toMatch(/may have been placed: retry only with the same idempotency key/)
    expect((unsure.cause as VoiceApiError).type).toBe('internal_error')
    // A 429 to the first attempt: nothing was placed, and the key is still there to retry with.
    seen.length = 0
    script = [limited]
    const first = make()
    const refused = (await run(() => first.client.createCall(request).catch((e: unknown) => e), first.clock)) as VoiceApiError
    expect(refused).toMatchObject({ type: 'rate_limit_exceeded', mayHaveBeenPlaced: false, idempotencyKey: seen[0]!.key, message: 'rate limit exceeded' })
  })

  it("a caller's own key: placedEarlier only when an attempt of this same createCall was lost", async () => {
    const request = { agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543210' }], idempotency_key: 'order-42' }
    for (const idempotency of ['auto', 'never'] as const) {
      // Answered 409 at once: the key was used before this call, as today — a plain duplicate_request.
      seen.length = 0
      script = [duplicate, ok]
      const fresh = make({ idempotency })
      const used = (await run(() => fresh.client.createCall(request).catch((e: unknown) => e), fresh.clock)) as VoiceApiError
      expect(used).toMatchObject({ type: 'duplicate_request', status: 409, placedEarlier: false, message: 'idempotency key already used' })
      expect(seen).toHaveLength(1)

      // The first attempt lost: its key is the caller's, but the call it placed exists all the same.
      seen.length = 0
      script = [json(503, 'unavailable'), duplicate, ok]
      const retried = make({ idempotency })
      const placed = (await run(() => retried.client.createCall(request).catch((e: unknown) => e), retried.clock)) as VoiceApiError
      expect(placed).toMatchObject({ type: 'duplicate_request', status: 409, placedEarlier: true })
      expect(seen.map((s) => s.key)).toEqual(['order-42', 'order-42'])
    }
  })

  it('reports every attempt to onOutcome: each answer by status, no answer as status 0 with the reason', async () => {
    seen.length = 0
    script = [json(500, { error: { message: 'boom', type: 'internal_error' } }), json(429, { error: { message: 'slow down', type: 'rate_limit_exceeded' } }, { 'retry-after': '1' }), ok]
    const outcomes: AttemptOutcome[] = []
    const { client, clock } = make({ onOutcome: (o: AttemptOutcome) => outcomes.push(o) })
    await run(() => client.createCall({ agent_id: 101, parameters: [{ name: 'customer_phone', value: '1' }] }), clock)
    expect(outcomes).toEqual([500, 429, 200].map((status) => ({ method: 'POST', path: '/v1/call', status, seconds: expect.any(Number) })))

    const unreachable: AttemptOutcome[] = []
    const clock2 = createManualClock()
    const down = createVoiceClient({ apiKey: 'k', baseUrl: 'http://127.0.0.1:9', clock: clock2, random: createSeededRandom(1), retry: { retries: 1 }, onOutcome: (o) => unreachable.push(o) })
    await run(() => down.getBatch(1).catch((e: unknown) => e), clock2)
    expect(unreachable).toHaveLength(2)
    expect(unreachable[0]).toMatchObject({ method: 'GET', path: '/v1/batch-calls/1', status: 0, error: expect.stringMatching(/cannot reach/) })

    // An observer that throws does not fail the request it observes.
    script = [ok]
    const throwing = make({ onOutcome: () => { throw new Error('observer bug') } })
    expect((await run(() => throwing.client.createCall({ agent_id: 101, parameters: [{ name: 'customer_phone', value: '1' }] }), throwing.clock)).status).toBe('initiated')
  })

  // A reconciliation pass hands one process-long signal to thousands of requests. On Node 20 each
  // `AbortSignal.any([deadline, signal])` left an entry on that signal for good (≈ 5 MB per 100,000 requests).
  it("leaves nothing behind on the caller's signal after each request, and the signal still stops one in flight", async () => {
    const stopping = new AbortController()
    const { client, clock } = make({ signal: stopping.signal })
    script = Array.from({ length: 20 }, () => json(200, { data: [], has_more: false, total: 0 }))
    for (let i = 0; i < 20; i++) await run(() => client.listConversations({ limit: 5 }), clock)
    const { EventEmitter } = await import('node:events')
    expect(EventEmitter.getEventListeners(stopping.signal, 'abort')).toHaveLength(0)
    const dependants = Object.getOwnPropertySymbols(stopping.signal).find((symbol) => String(symbol) === 'Symbol(kDependantSignals)')
    const held = dependants ? (stopping.signal as unknown as Record<symbol, Set<unknown> | undefined>)[dependants] : undefined
    expect(held?.size ?? 0).toBe(0)

    script = [stall]
    const inFlight = client.listConversations({ limit: 5 }).catch((e: unknown) => e)
    await new Promise((resolve) => setTimeout(resolve, 20))
    stopping.abort(new Error('stopping'))
    expect(((await inFlight) as Error).message).toBe('stopping')
  })

  it('picks the India base address by region', () => {
    expect(createVoiceClient({ apiKey: 'k', region: 'india' }).baseUrl).toBe('https://api.in.voice.formantai.com')
    expect(createVoiceClient({ apiKey: 'k' }).baseUrl).toBe('https://api.voice.formantai.com')
  })
})

describe('voice client deadlines', () => {
  // An upstream that sends its headers and the start of a body, then stalls (never ends the answer).
  let stalled: http.Server
  let stalledUrl: string
  const sockets = new Set<import('node:net').Socket>()
  beforeAll(async () => {
    stalled = http.createServer((req, res) => {
      const recording = req.url?.includes('/recording')
      res.writeHead(recording ? 404 : 200, { 'content-type': 'application/json' })
      res.write(recording ? '{"error":{"message":"not ' : '{"data":[')
    })
    stalled.on('connection', (socket) => {
      sockets.add(socket)
      socket.on('close', () => sockets.delete(socket))
    })
    await new Promise<void>((resolve) => stalled.listen(0, '127.0.0.1', resolve))
    stalledUrl = `http://127.0.0.1:${(stalled.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    for (const socket of sockets) socket.destroy()
    await new Promise((resolve) => stalled.close(resolve))
  })

  it('times out an answer whose body stalls after the headers, not only one whose headers never come', async () => {
    const client = createVoiceClient({ apiKey: 'k', baseUrl: stalledUrl, timeoutMs: 150, retry: { retries: 0 } })
    const started = performance.now()
    const error = (await client.listConversations({ limit: 5 }).catch((e: unknown) => e)) as VoiceApiError
    expect(isVoiceApiError(error)).toBe(true)
    expect(error.type).toBe('timeout')
    // Well before undici's own 300 s body timeout (or the test's 5 s).
    expect(performance.now() - started).toBeLessThan(3_000)
  })

  it('times out a streamed request whose error body stalls', async () => {
    const client = createVoiceClient({ apiKey: 'k', baseUrl: stalledUrl, timeoutMs: 150, retry: { retries: 0 } })
    const started = performance.now()
    const error = (await client.downloadRecording('conv_1').catch((e: unknown) => e)) as VoiceApiError
    expect(isVoiceApiError(error)).toBe(true)
    expect(error.status).toBe(404)
    expect(performance.now() - started).toBeLessThan(3_000)
  })
})

describe('voice client: why no answer came', () => {
  const call = { agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543210' }] }
  const batch = { agent_id: 101, name: 'leads', file: { data: 'customer_phone\n+919876543210\n' } }
  /** A loopback TCP server doing `onConnection` with each connection, closed (its sockets too) at the test's end. */
  const servers: Array<{ server: Server; sockets: Set<Socket> }> = []
  async function tcp(onConnection: (socket: Socket, server: Server) => void): Promise<string> {
    const sockets = new Set<Socket>()
    const server = createServer((socket) => {
      sockets.add(socket)
      socket.on('close', () => sockets.delete(socket))
      socket.on('error', () => {})
      onConnection(socket, server)
    })
    servers.push({ server, sockets })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  }
  afterAll(async () => {
    for (const { server, sockets } of servers) {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    }
  })
  const make = (baseUrl: string, extra = {}) => {
    const clock = createManualClock()
    return { clock, client: createVoiceClient({ apiKey: 'k', baseUrl, clock, random: createSeededRandom(5), ...extra }) }
  }

  it('a refused connection is a network_error that keeps its code and says the request was never sent (a batch upload, a call)', async () => {
    const nobody = `http://127.0.0.1:${await freePort()}`
    const upload = make(nobody)
    const refused = (await run(() => upload.client.createBatch(batch).catch((e: unknown) => e), upload.clock)) as VoiceApiError
    expect(refused).toMatchObject({ type: 'network_error', status: 0, networkCode: 'ECONNREFUSED', neverSent: true })
    expect(refused.message).toMatch(new RegExp(`^cannot reach ${nobody.replace(/[.:/]/g, '\\$&')}: .*\\(ECONNREFUSED\\)$`))
    // A call creation is retried with its key; every attempt refused, so none can have placed it.
    const placing = make(nobody)
    const notPlaced = (await run(() => placing.client.createCall(call).catch((e: unknown) => e), placing.clock)) as VoiceApiError
    expect(notPlaced).toMatchObject({ type: 'network_error', networkCode: 'ECONNREFUSED', neverSent: true, mayHaveBeenPlaced: false, placedEarlier: false })
    expect(notPlaced.idempotencyKey).toEqual(expect.any(String))
  })

  it('a connection reset after the request was sent stays ambiguous: its code kept, never neverSent', async () => {
    const resetting = await tcp((socket) => socket.once('data', () => socket.resetAndDestroy()))
    const { client, clock } = make(resetting)
    const error = (await run(() => client.createBatch(batch).catch((e: unknown) => e), clock)) as VoiceApiError
    expect(error).toMatchObject({ type: 'network_error', status: 0, neverSent: false })
    expect(error.networkCode).toEqual(expect.stringMatching(/^(ECONNRESET|UND_ERR_SOCKET)$/))
  })

  it('an attempt refused after an earlier one went unanswered is not neverSent: the call may have been placed', async () => {
    // The first connection is held without an answer and the listener closed: every retry is refused.
    const goneAway = await tcp((_socket, server) => server.close())
    const { client, clock } = make(goneAway, { timeoutMs: 100 })
    const error = (await run(() => client.createCall(call).catch((e: unknown) => e), clock)) as VoiceApiError
    expect(error).toMatchObject({ type: 'network_error', networkCode: 'ECONNREFUSED', neverSent: false, mayHaveBeenPlaced: true })
    expect((error.cause as VoiceApiError).type).toBe('timeout')
  })

  it('reads the cause through the fetch wrappers: before the connection (DNS, connect, its timeout) unsent; after it, not', () => {
    const system = (code: string, syscall?: string) => Object.assign(new Error(`${syscall ?? ''} ${code}`), { code, ...(syscall ? { syscall } : {}) })
    // ofetch's FetchError → undici's "fetch failed" → Node's error, as a failed request raises it.
    const wrapped = (inner: unknown) => new Error('[POST] "http://x/v1/batch-call": <no response> fetch failed', { cause: new TypeError('fetch failed', { cause: inner }) })
    const cases: Array<[unknown, string | undefined, boolean]> = [
      [system('ECONNREFUSED', 'connect'), 'ECONNREFUSED', true],
      [system('ENOTFOUND', 'getaddrinfo'), 'ENOTFOUND', true],
      [system('EAI_AGAIN', 'getaddrinfo'), 'EAI_AGAIN', true],
      [system('EHOSTUNREACH', 'connect'), 'EHOSTUNREACH', true],
      [system('UND_ERR_CONNECT_TIMEOUT'), 'UND_ERR_CONNECT_TIMEOUT', true],
      // Every address of the host refused (Happy Eyeballs): Node's AggregateError carries the first one's code.
      [Object.assign(new AggregateError([system('ECONNREFUSED', 'connect'), system('ECONNREFUSED', 'connect')]), { code: 'ECONNREFUSED' }), 'ECONNREFUSED', true],
      [Object.assign(new AggregateError([system('ECONNREFUSED', 'connect'), system('ECONNRESET', 'read')]), { code: 'ECONNREFUSED' }), 'ECONNREFUSED', false],
      [system('ECONNRESET', 'read'), 'ECONNRESET', false],
      [system('EHOSTUNREACH', 'write'), 'EHOSTUNREACH', false],
      [system('EPIPE', 'write'), 'EPIPE', false],
      [system('UND_ERR_SOCKET'), 'UND_ERR_SOCKET', false],
      [new DOMException('The operation was aborted', 'AbortError'), undefined, false],
      [new Error('something else'), undefined, false],
    ]
    for (const [inner, networkCode, unsent] of cases) expect(unansweredCause(wrapped(inner))).toEqual({ networkCode, unsent })
    expect(unansweredCause(undefined)).toEqual({ networkCode: undefined, unsent: false })
  })
})
