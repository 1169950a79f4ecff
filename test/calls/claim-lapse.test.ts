import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, expect, it, vi } from 'vitest'
import { enqueueCalls, startCallQueue, type CallQueue } from '../../src/calls/call-queue.ts'
import { createManualClock, systemClock, type Clock } from '../../src/utils/clock.ts'
import { createTestRuntime } from '../helpers/runtime.ts'
import { createRuntime, type Runtime } from '../../src/runtime.ts'
import { loadConfig } from '../../src/config/load.ts'
import { createSilentLogger } from '../../src/utils/logger.ts'
import { createSeededRandom } from '../../src/utils/random.ts'

/**
 * A queued call whose claim lapses while it is being sent: a process frozen (a VM pause) between its claim and its
 * POST, or a wall clock stepped forward by NTP during the request. Whoever holds the call now places it; the late
 * sender's answer (409 duplicate_request, which its own first attempt reads as a refusal) must not overwrite the
 * ledger, and one process never sends the same call twice at once. A real HTTP provider stub on loopback.
 */
const created = new Map<string, string>()
let requests = 0
function provider(_req: IncomingMessage, res: ServerResponse, body: string) {
  requests++
  const { agent_id, idempotency_key } = JSON.parse(body) as { agent_id: number; idempotency_key: string }
  res.setHeader('content-type', 'application/json')
  if (created.has(idempotency_key)) {
    res.writeHead(409)
    return res.end(JSON.stringify({ error: { message: 'idempotency key already used', type: 'duplicate_request' } }))
  }
  created.set(idempotency_key, `tr_${created.size + 1}`)
  res.end(JSON.stringify({ data: { agent_id, conversation_id: null, scheduled_for: null, status: 'initiated', trace_id: created.get(idempotency_key) } }))
}
async function listen(handler: (req: IncomingMessage, res: ServerResponse, body: string) => void) {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => handler(req, res, Buffer.concat(chunks).toString('utf8')))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections()
      server.close(() => r())
    }),
  }
}

let cleanup: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const f of cleanup.reverse()) await f()
  cleanup = []
  created.clear()
  requests = 0
})

const KEY = 'sk_live_claim_lapse'
const CALL = { agent_id: 101, idempotency_key: 'key-1', parameters: [{ name: 'customer_phone', value: '+919876543210' }] }

it('a replica frozen between claiming a call and sending it does not overwrite the call another placed meanwhile', async () => {
  const real = await listen(provider)
  let releaseA: (() => void) | undefined
  const gate = await listen((req, res, body) => void (releaseA = () => provider(req, res, body)))
  cleanup.push(real.close, gate.close)
  // One clock per replica: A's stands still while it is frozen.
  const clockA = createManualClock('2026-03-01T10:00:00Z')
  const clockB = createManualClock('2026-03-01T10:00:00Z')
  const a = await createTestRuntime({ clock: clockA, env: { VOICE_API_KEY: KEY, VOICE_API_BASE_URL: gate.url, UPSTREAM_TIMEOUT_MS: '5000' } })
  cleanup.push(() => a.close())
  const configB = loadConfig({ env: { DATA_DIR: a.dataDir, WEBHOOK_SECRET: 'whsec_test_secret', PORT: '0', LOG_LEVEL: 'silent', RECIPES_TYPECHECK: 'false', VOICE_API_KEY: KEY, VOICE_API_BASE_URL: real.url, UPSTREAM_TIMEOUT_MS: '5000' } })
  const b: Runtime = await createRuntime(configB, { store: a.store, skipMigrate: true, clock: clockB, random: createSeededRandom(999), log: createSilentLogger() })

  // A claims the call and sends it at once; its request is held in front of the provider (A is frozen).
  const sendingA = enqueueCalls(a, [{ apiKey: KEY, request: CALL, recipe: 'test' }])
  await vi.waitFor(() => expect(releaseA).toBeDefined())
  // 25 s later on B's clock A's claim (5 s + 15 s) has lapsed: B's queue claims the call and places it.
  await clockB.advance(25_000)
  let queue: CallQueue | undefined = startCallQueue(b)
  cleanup.push(async () => queue?.stop())
  const ledger = () => a.store.db.selectFrom('calls').select(['status', 'trace_id', 'error']).executeTakeFirstOrThrow()
  await vi.waitFor(async () => {
    await clockB.advance(1_000)
    await queue!.idle()
    expect((await ledger()).status).toBe('initiated')
  })
  await queue.stop()
  queue = undefined
  // A resumes: its request reaches the provider, which answers 409 (the key was used, by B).
  releaseA!()
  await sendingA
  expect([created.size, requests]).toEqual([1, 2])
  expect(await ledger()).toEqual({ status: 'initiated', trace_id: 'tr_1', error: null })
})

it('a wall clock stepping forward during a send: the process does not send the call a second time beside it', async () => {
  let first: (() => void) | undefined
  let n = 0
  const server = await listen((req, res, body) => {
    // A call before it is answered at once (the queue has heard from the provider: it sends side by side from then on);
    // the call under test is answered late (the provider takes a moment).
    if (n++ === 1) first = () => provider(req, res, body)
    else provider(req, res, body)
  })
  cleanup.push(server.close)
  let offset = 0
  const clock: Clock = { now: () => Date.now() + offset, setTimeout: systemClock.setTimeout }
  const rt = await createTestRuntime({ clock, env: { VOICE_API_KEY: KEY, VOICE_API_BASE_URL: server.url, UPSTREAM_TIMEOUT_MS: '5000' } })
  cleanup.push(() => rt.close())
  const queue = startCallQueue(rt)
  cleanup.push(() => queue.stop())
  await enqueueCalls(rt, [{ apiKey: KEY, request: { ...CALL, idempotency_key: 'key-0' }, recipe: 'test' }])
  await vi.waitFor(async () => expect(await rt.store.db.selectFrom('call_queue').selectAll().execute()).toEqual([]), { timeout: 5_000 })
  await enqueueCalls(rt, [{ apiKey: KEY, request: CALL, recipe: 'test' }])
  await vi.waitFor(() => expect(first).toBeDefined())
  // NTP steps the clock 60 s forward: the claim has lapsed on the clock, and the queue's sweep (1 s) claims the call again.
  offset += 60_000
  await vi.waitFor(async () => expect((await rt.store.db.selectFrom('call_queue').select('attempts').executeTakeFirstOrThrow()).attempts).toBe(2), { timeout: 5_000 })
  first!()
  await vi.waitFor(async () => expect(await rt.store.db.selectFrom('call_queue').selectAll().execute()).toEqual([]), { timeout: 5_000 })
  await queue.idle()
  expect(n).toBe(2)
  expect(await rt.store.db.selectFrom('calls').select(['status', 'trace_id', 'error']).where('idempotency_key', '=', 'key-1').executeTakeFirstOrThrow()).toEqual({ status: 'initiated', trace_id: 'tr_2', error: null })
})
