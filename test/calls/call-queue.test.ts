import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, expect, it, vi } from 'vitest'
import { enqueueCall, enqueueCalls, startCallQueue, type CallQueue } from '../../src/calls/call-queue.ts'
import { scheduleCalls } from '../../src/campaigns/schedule-call.ts'
import { createManualClock, type ManualClock } from '../../src/utils/clock.ts'
import { setYieldGate } from '../../src/coordination/receiver-load.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { createRuntime } from '../../src/runtime.ts'
import { createSilentLogger } from '../../src/utils/logger.ts'
import { isoWithOffset } from '../../src/sandbox/rate-limit.ts'
import { main } from '../../src/cli.ts'

/**
 * A provider stand-in with the provider's limits: answers 429s as scripted (rate limit with Retry-After,
 * concurrency limit with current_calls/max_calls), remembers idempotency keys (a reused key is 409
 * duplicate_request), and counts what it created.
 */
interface FakeProvider {
  url: string
  created: Map<string, number>
  /** The scheduled_for each created call was sent with (by idempotency key). */
  scheduledFor: Map<string, string | undefined>
  requests: number
  /** 'lost': the call is created, and its answer replaced by a gateway's 502. */
  script: Array<'rate' | 'concurrency' | 'error' | 'lost' | 'odd-type'>
  /** API keys answered 429 (rate limit, Retry-After 30 s) on every request. */
  limited: Set<string>
  /** While set, answers wait for it (requests are counted as they arrive). */
  held: Promise<void> | undefined
  close(): Promise<void>
}

async function startFakeProvider(): Promise<FakeProvider> {
  const fake: FakeProvider = { url: '', created: new Map(), scheduledFor: new Map(), requests: 0, script: [], limited: new Set(), held: undefined, close: async () => {} }
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', async () => {
      fake.requests++
      await fake.held
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { agent_id: number; idempotency_key: string; scheduled_for?: string }
      res.setHeader('content-type', 'application/json')
      const next = fake.limited.has(String(req.headers.authorization).replace('Bearer ', '')) ? 'rate' : fake.script.shift()
      if (next === 'rate') {
        res.writeHead(429, { 'retry-after': '30', 'x-ratelimit-remaining': '0' })
        return res.end(JSON.stringify({ error: { message: 'rate limit exceeded', type: 'rate_limit_exceeded' } }))
      }
      if (next === 'error') {
        res.writeHead(500)
        return res.end(JSON.stringify({ error: { message: 'internal error', type: 'internal_error' } }))
      }
      if (next === 'concurrency') {
        res.writeHead(429, { 'retry-after': '10' })
        return res.end(JSON.stringify({ error: { message: 'concurrent call limit reached. 10 simultaneous calls allowed.', type: 'concurrent_call_limit_exceeded', current_calls: 10, max_calls: 10 } }))
      }
      if (next === 'odd-type') {
        // A type the spec does not list (a gateway's, a newer provider's): each answer a new one.
        res.writeHead(400)
        return res.end(JSON.stringify({ error: { message: 'refused', type: `gateway "refusal" #${fake.requests}\n${'z'.repeat(100)}` } }))
      }
      if (fake.created.has(body.idempotency_key)) {
        res.writeHead(409)
        return res.end(JSON.stringify({ error: { message: 'idempotency key already used', type: 'duplicate_request' } }))
      }
      fake.created.set(body.idempotency_key, fake.created.size + 1)
      fake.scheduledFor.set(body.idempotency_key, body.scheduled_for)
      if (next === 'lost') {
        res.writeHead(502, { 'content-type': 'text/html' })
        return res.end('<html>bad gateway</html>')
      }
      const status = body.scheduled_for ? 'scheduled' : 'initiated'
      res.end(JSON.stringify({ data: { agent_id: body.agent_id, conversation_id: null, scheduled_for: body.scheduled_for ?? null, status, trace_id: `tr_${fake.created.size}` } }))
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  fake.close = () => new Promise((r) => server.close(() => r()))
  return fake
}

const call = (n: number, apiKey = 'sk_live_queue_test') => ({
  apiKey,
  request: { agent_id: 101, idempotency_key: `key-${n}`, parameters: [{ name: 'customer_phone', value: `+91987654321${n}` }] },
  recipe: 'test',
})

describeEachDialect('paced call queue', (dialect) => {
  let rt: TestRuntime
  let clock: ManualClock
  let fake: FakeProvider
  let queue: CallQueue | undefined
  afterEach(async () => {
    await queue?.stop()
    queue = undefined
    await rt?.close()
    await fake?.close()
  })

  async function boot(at = '2026-03-01T10:00:00Z', env: Record<string, string> = {}): Promise<void> {
    fake = await startFakeProvider()
    clock = createManualClock(at)
    rt = await createTestRuntime({ dialect, clock, env: { VOICE_API_KEY: 'sk_live_queue_test', VOICE_API_BASE_URL: fake.url, CALL_QUEUE_CONCURRENCY: '2', ...env } })
  }

  const statuses = async () => (await rt.store.db.selectFrom('calls').select(['idempotency_key', 'status']).orderBy('idempotency_key').execute()).map((r) => `${r.idempotency_key}:${r.status}`)

  it('waits out a 429 (Retry-After, concurrency limit) and sends again with the same key: none failed, none twice', async () => {
    await boot()
    fake.script = ['rate']
    queue = startCallQueue(rt)
    for (let i = 0; i < 5; i++) expect((await enqueueCall(rt, call(i))).ok).toBe(true)
    expect((await enqueueCall(rt, call(0))).ok).toBe(false) // the same key again: a duplicate, not a second call
    await vi.waitFor(() => expect(fake.requests).toBeGreaterThanOrEqual(1))
    await queue.idle()
    // The rate limit blocks the whole workspace for Retry-After (30 s): nothing more is sent meanwhile.
    const during = fake.requests
    await clock.advance(20_000)
    await queue.idle()
    expect(fake.requests).toBe(during)
    expect((await statuses()).filter((s) => s.endsWith(':queued')).length).toBeGreaterThan(0)
    // `calls list` says why a queued call waits and when it goes next, not a bare "queued".
    let listed = ''
    expect(await main(['calls', 'list', '--json'], { env: { VOICE_API_KEY: 'sk_live_queue_test', VOICE_API_BASE_URL: fake.url, WEBHOOK_SECRET: 'whsec_test_secret', DATA_DIR: rt.dataDir, DATABASE_URL: rt.store.url, LOG_LEVEL: 'silent' }, stdout: (t) => void (listed += t), stderr: () => {} })).toBe(0)
    const waiting = (JSON.parse(listed) as Array<{ status: string; next_attempt_at: string | null; waiting_on: string | null }>).filter((c) => c.waiting_on !== null)
    expect(waiting.length).toBeGreaterThan(0)
    for (const c of waiting) {
      expect(c).toMatchObject({ status: 'queued', waiting_on: 'rate_limit_exceeded: rate limit exceeded' })
      expect(Date.parse(c.next_attempt_at!)).toBe(clock.now() - 20_000 + 30_000)
    }
    // ...and its calls stay unclaimed while it waits: every claim (an attempt) was a request to the provider,
    // but for one more claimed while the 429 was on its way back (CALL_QUEUE_CONCURRENCY is 2 here).
    const attempts = (await rt.store.db.selectFrom('call_queue').select('attempts').execute()).reduce((n, r) => n + r.attempts, 0)
    expect(attempts).toBeLessThanOrEqual(fake.requests + 1)
    fake.script = ['concurrency']
    await clock.advance(11_000)
    await vi.waitFor(async () => {
      await clock.advance(11_000)
      await queue!.idle()
      expect(await statuses()).toEqual(['key-0:initiated', 'key-1:initiated', 'key-2:initiated', 'key-3:initiated', 'key-4:initiated'])
    }, { timeout: 10_000, interval: 50 })
    expect([...fake.created.keys()].sort()).toEqual(['key-0', 'key-1', 'key-2', 'key-3', 'key-4'])
    expect(await rt.store.db.selectFrom('call_queue').selectAll().execute()).toEqual([])
    const metrics = await rt.metrics.metrics()
    expect(metrics).toMatch(/switchboard_calls_retried_total\{reason="rate_limit"\} 1/)
    expect(metrics).toMatch(/switchboard_calls_retried_total\{reason="concurrency_limit"\} 1/)
    expect(metrics).toMatch(/switchboard_calls_placed_total\{status="initiated"\} 5/)
    expect(metrics).not.toMatch(/switchboard_calls_failed_total\{/)
  })

  // A process just started knows nothing of a workspace's limits: it sent a send slot's worth of calls at once, and a
  // workspace whose rate another process had spent answered each with a 429.
  it('a fresh queue sends one call first and opens up once the provider has answered: a spent limit costs one 429, not one per send slot', async () => {
    await boot(undefined, { CALL_QUEUE_CONCURRENCY: '6' })
    fake.limited.add('sk_live_queue_test')
    let answer: () => void = () => {}
    fake.held = new Promise((resolve) => (answer = resolve))
    queue = startCallQueue(rt)
    await enqueueCalls(rt, [0, 1, 2, 3, 4, 5].map((n) => call(n)))
    // The queue claims all six at once; while the first answer is on its way the other five are put back, not sent:
    // once as many calls are claimed as have reached the provider, the queue is done with them.
    const claimed = async () => (await rt.store.db.selectFrom('call_queue').select('id').where('claimed_by', 'is not', null).execute()).length
    await vi.waitFor(async () => {
      expect(fake.requests).toBeGreaterThanOrEqual(1)
      expect(await claimed()).toBe(fake.requests)
    })
    expect(fake.requests).toBe(1)
    answer()
    fake.held = undefined
    await queue.idle()
    expect(fake.requests).toBe(1)
    // Once the limit lifts (Retry-After 30 s) the queue, having heard from the provider, sends the rest side by side.
    fake.limited.clear()
    await clock.advance(30_000)
    await vi.waitFor(async () => {
      await clock.advance(1_000)
      await queue!.idle()
      expect(await statuses()).toEqual([0, 1, 2, 3, 4, 5].map((n) => `key-${n}:initiated`))
    }, { timeout: 10_000, interval: 50 })
    expect(fake.requests).toBe(7)
  })

  it('each line about a queued call names its agent and campaign, and a placed call says so with its trace id', async () => {
    await boot()
    const logs = captureLogs('info')
    rt.log = logs.log
    fake.script = ['rate']
    queue = startCallQueue(rt)
    const request = { agent_id: 101, idempotency_key: 'key-logged', parameters: [{ name: 'customer_phone', value: '+919876543219' }, { name: 'campaign', value: 'spring' }] }
    expect((await enqueueCall(rt, { apiKey: 'sk_live_queue_test', request, recipe: 'test' })).ok).toBe(true)
    await vi.waitFor(async () => {
      await clock.advance(31_000)
      await queue!.idle()
      expect(await statuses()).toEqual(['key-logged:initiated'])
    }, { timeout: 10_000, interval: 50 })
    expect(logs.find(/^provider limit reached/)).toEqual([expect.objectContaining({ agent_id: 101, campaign: 'spring' })])
    expect(logs.find(/^queued call placed$/)).toEqual([expect.objectContaining({ agent_id: 101, campaign: 'spring', trace_id: expect.stringMatching(/^tr_/), status: 'initiated' })])
  })

  it('a call held back by the provider\'s limits past the calling window\'s close goes out scheduled for the next opening', async () => {
    // 20:50 in India: inside the 09:00–21:00 window, so the follow-ups are queued to go at once.
    await boot('2026-03-01T15:20:00Z')
    fake.limited.add('sk_live_queue_test')
    queue = startCallQueue(rt)
    const effects = { dryRun: false, plan: [] }
    const outcomes = await scheduleCalls(rt, [1, 2].map((n) => ({ agentId: 101, phone: `+91987654321${n}`, idempotencyKey: `late-${n}` })), effects, { recipe: 'test' })
    expect(outcomes.map((o) => o.status)).toEqual(['queued', 'queued'])
    expect(outcomes.map((o) => o.request.scheduled_for)).toEqual([undefined, undefined])
    await vi.waitFor(() => expect(fake.requests).toBeGreaterThanOrEqual(1))
    await queue.idle()
    // The rate limit holds them until 21:10 — past the window's close.
    await clock.advance(20 * 60_000)
    fake.limited.clear()
    await vi.waitFor(async () => {
      await clock.advance(30_000)
      await queue!.idle()
      expect(fake.created.size).toBe(2)
    }, { timeout: 10_000, interval: 50 })
    // Sent with the same keys, for 09:00 the next morning in India (03:30 UTC), not rung at once at 21:10.
    expect([...fake.scheduledFor.entries()].sort()).toEqual([['late-1', '2026-03-02T03:30:00.000Z'], ['late-2', '2026-03-02T03:30:00.000Z']])
    const rows = await rt.store.db.selectFrom('calls').select(['idempotency_key', 'status', 'scheduled_for']).orderBy('idempotency_key').execute()
    expect(rows).toEqual([
      { idempotency_key: 'late-1', status: 'scheduled', scheduled_for: Date.parse('2026-03-02T03:30:00Z') },
      { idempotency_key: 'late-2', status: 'scheduled', scheduled_for: Date.parse('2026-03-02T03:30:00Z') },
    ])
  })

  it('a call queued without a calling window (by a previous version) is sent as it was', async () => {
    await boot('2026-03-01T15:45:00Z') // 21:15 in India
    expect((await enqueueCall(rt, call(8))).ok).toBe(true) // no window given: sent at once, as before
    expect(fake.scheduledFor.get('key-8')).toBeUndefined()
  })

  it('waiting on the provider\'s limits spends none of the retries a server error gets: many 429s, then a 500, and the call still goes', async () => {
    await boot()
    // More 429s than MAX_TRANSIENT_ATTEMPTS (8), then a 500: the 500 is the first send that may have reached the provider.
    fake.script = [...Array.from({ length: 10 }, () => 'concurrency' as const), 'error']
    queue = startCallQueue(rt)
    expect((await enqueueCall(rt, call(3))).ok).toBe(true)
    await vi.waitFor(async () => {
      await clock.advance(11_000)
      await queue!.idle()
      expect(await statuses()).toEqual(['key-3:initiated'])
    }, { timeout: 10_000, interval: 20 })
    expect(fake.requests).toBe(12)
    expect(fake.created.size).toBe(1)
  })

  it('a provider failing for ten minutes (5xx) does not fail the calls queued before: they are sent for an hour', async () => {
    await boot()
    // Eleven 500s: eight sends with backoff span about four minutes, the eleventh about twenty.
    fake.script = Array.from({ length: 11 }, () => 'error' as const)
    queue = startCallQueue(rt)
    expect((await enqueueCall(rt, call(4))).ok).toBe(true)
    // Steps shorter than a claim (UPSTREAM_TIMEOUT_MS + 15 s), so a send in flight is not taken over meanwhile.
    await vi.waitFor(async () => {
      await clock.advance(20_000)
      await queue!.idle()
      expect(await statuses()).toEqual(['key-4:initiated'])
    }, { timeout: 30_000, interval: 20 })
    expect(fake.requests).toBe(12)
    expect(fake.created.size).toBe(1)
  })

  it('a tenant waiting on its limits does not hold back another tenant; its calls stay unclaimed until it may send', async () => {
    await boot()
    fake.limited.add('sk_live_other_team')
    queue = startCallQueue(rt)
    await enqueueCalls(rt, [0, 1, 2].map((n) => call(n, 'sk_live_other_team')))
    await vi.waitFor(() => expect(fake.requests).toBeGreaterThanOrEqual(1))
    await queue.idle()
    await enqueueCalls(rt, [3, 4, 5].map((n) => call(n)))
    await vi.waitFor(async () => {
      await queue!.idle()
      expect((await statuses()).filter((s) => s.endsWith(':initiated'))).toEqual(['key-3:initiated', 'key-4:initiated', 'key-5:initiated'])
    })
    const held = await rt.store.db.selectFrom('call_queue').select(['attempts', 'claimed_by']).execute()
    expect(held).toHaveLength(3)
    expect(held.reduce((n, r) => n + r.attempts, 0)).toBeLessThanOrEqual(fake.requests - 3)
    // Once the limit lifts (Retry-After 30 s), they go.
    fake.limited.clear()
    await vi.waitFor(async () => {
      await clock.advance(10_000)
      await queue!.idle()
      expect(await statuses()).toEqual(['key-0', 'key-1', 'key-2', 'key-3', 'key-4', 'key-5'].map((k) => `${k}:initiated`))
    }, { timeout: 10_000, interval: 50 })
  })

  it('a refusal whose error type the spec does not list counts under reason "other": the label stays bounded', async () => {
    await boot()
    fake.script = ['odd-type', 'odd-type', 'odd-type']
    queue = startCallQueue(rt)
    for (let i = 0; i < 3; i++) await enqueueCall(rt, call(i))
    await vi.waitFor(async () => {
      await queue!.idle()
      expect(await statuses()).toEqual(['key-0:rejected', 'key-1:rejected', 'key-2:rejected'])
    })
    const failed = (await rt.metrics.metrics()).split('\n').filter((l) => l.startsWith('switchboard_calls_failed_total{'))
    expect(failed).toEqual(['switchboard_calls_failed_total{reason="other"} 3'])
  })

  it('a number put on the do-not-call list while its call waited (held by a 429) is not called: rejected, with why', async () => {
    await boot()
    fake.script = ['rate']
    queue = startCallQueue(rt)
    // The first call meets the 429 (queued alone: two queued at once may reach the provider in either order).
    expect((await enqueueCall(rt, call(1))).ok).toBe(true)
    await vi.waitFor(() => expect(fake.requests).toBeGreaterThanOrEqual(1))
    await queue.idle()
    expect((await enqueueCall(rt, call(2))).ok).toBe(true)
    // An opt-out (or an import) meanwhile.
    await rt.store.db.insertInto('dnc').values({ phone: '+919876543211', reason: 'opted out', source: 'test', added_at: clock.now() }).execute()
    await vi.waitFor(async () => {
      await clock.advance(20_000)
      await queue!.idle()
      expect(await statuses()).toEqual(['key-1:rejected', 'key-2:initiated'])
    }, { timeout: 10_000, interval: 50 })
    expect([...fake.created.keys()]).toEqual(['key-2'])
    const row = await rt.store.db.selectFrom('calls').select('error').where('idempotency_key', '=', 'key-1').executeTakeFirstOrThrow()
    expect(row.error).toBe('on the do-not-call list (added after the call was queued): not called')
    expect(await rt.metrics.metrics()).toMatch(/switchboard_calls_failed_total\{reason="dnc"\} 1/)
  })

  it('an opt-out after an attempt whose answer was lost: not sent again, and recorded failed ("may have placed it"), not "not called"', async () => {
    await boot()
    // The provider places the call; the gateway loses its answer; the person opts out during that very call.
    fake.script = ['lost']
    queue = startCallQueue(rt)
    expect((await enqueueCall(rt, call(1))).ok).toBe(true)
    await vi.waitFor(() => expect(fake.requests).toBe(1))
    await queue.idle()
    await rt.store.db.insertInto('dnc').values({ phone: '+919876543211', reason: 'asked in call', source: 'opt-out', added_at: clock.now() }).execute()
    await vi.waitFor(async () => {
      await clock.advance(20_000)
      await queue!.idle()
      expect(await statuses()).toEqual(['key-1:failed'])
    }, { timeout: 10_000, interval: 50 })
    expect(fake.requests).toBe(1)
    expect([...fake.created.keys()]).toEqual(['key-1'])
    const row = await rt.store.db.selectFrom('calls').select('error').where('idempotency_key', '=', 'key-1').executeTakeFirstOrThrow()
    expect(row.error).toMatch(/not sent again, but an earlier attempt whose answer was lost may have placed it/)
  })

  it('a call queued with an API key this process does not know is left for the process that queued it, and failed only after 24 h', async () => {
    await boot()
    // Queued by another process (a replica, or a CLI recipe run that met a 429) with its own key: this process
    // never had that key (keys are never stored).
    const other = await createRuntime(rt.config, { store: rt.store, skipMigrate: true, clock, log: createSilentLogger() })
    fake.limited.add('sk_live_recipe_key')
    await enqueueCalls(other, [call(7, 'sk_live_recipe_key')])
    expect(fake.requests).toBe(1)
    queue = startCallQueue(rt)
    await clock.advance(60_000)
    await queue.idle()
    expect(await statuses()).toEqual(['key-7:queued'])
    // A day later (the row made older rather than the clock moved a day: the queue's timers would fire 86,400 times).
    await rt.store.db.updateTable('call_queue').set({ enqueued_at: clock.now() - 24 * 3_600_000 }).execute()
    await vi.waitFor(async () => {
      await clock.advance(1_000)
      await queue!.idle()
      expect(await statuses()).toEqual(['key-7:failed'])
    }, { timeout: 10_000, interval: 50 })
  })

  it('waits at the receiver-first gate (the processing thread holds back during a burst), then sends', async () => {
    await boot()
    let open!: () => void
    const burstOver = new Promise<void>((resolve) => (open = resolve))
    let waited = 0
    setYieldGate(rt, () => {
      waited++
      return burstOver
    })
    queue = startCallQueue(rt)
    expect((await enqueueCall(rt, call(1))).ok).toBe(true)
    await vi.waitFor(() => expect(waited).toBeGreaterThan(0))
    // Held at the gate before claiming: the call is neither claimed nor sent.
    expect(await rt.store.db.selectFrom('call_queue').select(['attempts', 'claimed_by']).execute()).toEqual([{ attempts: 0, claimed_by: null }])
    expect(fake.requests).toBe(0)
    open()
    await vi.waitFor(async () => {
      await queue!.idle()
      expect(await statuses()).toEqual(['key-1:initiated'])
    })
  })

  it('a call claimed by a process killed mid-send is sent again after its claim lapses, and not placed twice', async () => {
    await boot()
    expect((await enqueueCall(rt, call(7))).ok).toBe(true) // no queue runs here: sent at once
    expect(fake.created.size).toBe(1)
    // What a kill -9 between the provider's answer and the ledger update leaves behind.
    const id = (await rt.store.db.selectFrom('calls').select('id').executeTakeFirstOrThrow()).id
    await rt.store.db.updateTable('calls').set({ status: 'queued', trace_id: null }).execute()
    await rt.store.db.insertInto('call_queue').values({
      id, tenant: (await rt.store.db.selectFrom('calls').select('tenant').executeTakeFirstOrThrow()).tenant,
      request: JSON.stringify(call(7).request), attempts: 1, next_attempt_at: clock.now(), claimed_by: 'dead-process', claimed_until: clock.now() + 60_000,
      enqueued_at: clock.now(), last_error: null,
    }).execute()
    queue = startCallQueue(rt)
    await queue.idle()
    expect(await statuses()).toEqual(['key-7:queued']) // still claimed by the dead process
    await clock.advance(61_000)
    await vi.waitFor(async () => {
      await queue!.idle()
      expect(await statuses()).toEqual(['key-7:initiated'])
    })
    expect(fake.created.size).toBe(1)
    expect(await rt.store.db.selectFrom('call_queue').selectAll().execute()).toEqual([])
  })

  it('a key queued again after its call ended ambiguous (failed after timeouts) is not refused when the provider already has it', async () => {
    await boot()
    // The earlier send did reach the provider; its answer never came back, so the ledger says failed.
    fake.created.set('key-9', 1)
    expect((await enqueueCall(rt, call(1))).ok).toBe(true)
    const { tenant } = await rt.store.db.selectFrom('calls').select('tenant').executeTakeFirstOrThrow()
    await rt.store.db.insertInto('calls').values({
      id: 'ambiguous-9', tenant, agent_id: 101, customer_phone: '+919876543219', idempotency_key: 'key-9', trace_id: null, conversation_id: null,
      previous_conversation_id: null, scheduled_for: null, parameters: '[]', retry_context: null, metadata: null, recipe: 'test', campaign: null,
      status: 'failed', error: 'network_error: timed out', created_at: clock.now() - 3_600_000, updated_at: clock.now() - 3_600_000,
    }).execute()
    // A follow-up sweep plans the same call again, with the same deterministic key: no queue runs here, so it is sent at once.
    expect((await enqueueCall(rt, call(9))).ok).toBe(true)
    const row = await rt.store.db.selectFrom('calls').select(['status', 'error']).where('id', '=', 'ambiguous-9').executeTakeFirstOrThrow()
    // The provider's 409 means it has the call: recorded as placed (so nothing plans it again), not rejected.
    expect(row).toEqual({ status: 'initiated', error: 'accepted by an earlier attempt whose answer was lost; trace id unknown' })
    expect(fake.created.size).toBe(2)
  })

  it('queues a batch in one go: a copy within the batch and a key already used are duplicates; a refused key is used again', async () => {
    await boot()
    // No queue runs here, so each queued call is sent at once.
    expect((await enqueueCall(rt, call(1))).ok).toBe(true)
    await rt.store.db.insertInto('calls').values({
      id: 'refused-1', tenant: (await rt.store.db.selectFrom('calls').select('tenant').executeTakeFirstOrThrow()).tenant, agent_id: 101, customer_phone: '+919876543213',
      idempotency_key: 'key-3', trace_id: null, conversation_id: null, previous_conversation_id: null, scheduled_for: null, parameters: '[]', retry_context: null,
      metadata: null, recipe: 'test', campaign: null, status: 'rejected', error: 'invalid_request', created_at: clock.now() - 60_000, updated_at: clock.now() - 60_000,
    }).execute()
    const results = await enqueueCalls(rt, [call(0), call(1), call(2), call(0), call(3)])
    expect(results.map((r) => (r.ok ? `ok:${r.record.idempotency_key}` : `duplicate:${r.record.idempotency_key}`))).toEqual(['ok:key-0', 'duplicate:key-1', 'ok:key-2', 'duplicate:key-0', 'ok:key-3'])
    // The refused key's ledger row is taken over (same id), not duplicated.
    expect(results[4]!.record.id).toBe('refused-1')
    expect(await statuses()).toEqual(['key-0:initiated', 'key-1:initiated', 'key-2:initiated', 'key-3:initiated'])
    expect([...fake.created.keys()].sort()).toEqual(['key-0', 'key-1', 'key-2', 'key-3'])
    expect(await rt.store.db.selectFrom('call_queue').selectAll().execute()).toEqual([])
    // Sent here, counted here; but no queue runs here, so no depth is listed (a receiver's read 0 beside a full queue).
    const metrics = await rt.metrics.metrics()
    expect(metrics).toContain('switchboard_calls_placed_total{status="initiated"} 4\n')
    expect(metrics).not.toContain('switchboard_call_queue_depth')
  })
})

it('after a concurrent_call_limit_exceeded the queue sends one call at a time, widening as calls are accepted: no burst of 429s each time a slot frees', async () => {
  // A provider with a workspace limit of MAX calls in progress, of staggered lengths on the shared clock.
  const MAX = 10
  const clock = createManualClock('2026-03-01T05:00:00Z')
  const active: number[] = []
  const seen = { accepted: 0, limited: 0, keys: new Set<string>() }
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const now = clock.now()
      for (let i = active.length - 1; i >= 0; i--) if (active[i]! <= now) active.splice(i, 1)
      res.setHeader('content-type', 'application/json')
      if (active.length >= MAX) {
        seen.limited++
        res.writeHead(429, { 'retry-after': String(Math.max(1, Math.ceil((Math.min(...active) - now) / 1000))) })
        return res.end(JSON.stringify({ error: { message: `concurrent call limit reached. ${MAX} simultaneous calls allowed.`, type: 'concurrent_call_limit_exceeded', current_calls: active.length, max_calls: MAX } }))
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { agent_id: number; idempotency_key: string }
      seen.keys.add(body.idempotency_key)
      active.push(now + 60_000 + (seen.accepted % 7) * 9_000)
      seen.accepted++
      res.end(JSON.stringify({ data: { agent_id: body.agent_id, conversation_id: null, scheduled_for: null, status: 'initiated', trace_id: `tr_${seen.accepted}` } }))
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const rt = await createTestRuntime({ clock, env: { VOICE_API_KEY: 'sk_live_x', VOICE_API_BASE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}` } })
  const queue = startCallQueue(rt)
  try {
    const N = 60
    await enqueueCalls(rt, Array.from({ length: N }, (_, i) => ({ apiKey: 'sk_live_x', request: { agent_id: 101, idempotency_key: `k${i}`, parameters: [{ name: 'customer_phone', value: `+9198765432${String(i).padStart(2, '0')}` }] } })))
    await vi.waitFor(async () => {
      await clock.advance(5_000)
      await queue.idle()
      expect(seen.accepted).toBe(N)
    }, { timeout: 20_000, interval: 10 })
    expect(seen.keys.size).toBe(N)
    // Each slot that frees costs a probe or two, not the queue's whole concurrency (32): 926 429s for these 60 calls before.
    expect(seen.limited).toBeLessThan(3 * N)
  } finally {
    await queue.stop()
    await rt.close()
    await new Promise((r) => server.close(r))
  }
})

it.each([
  ['agrees with', 0],
  ['is 10 minutes behind', 10 * 60_000],
  ['is 10 minutes ahead of', -10 * 60_000],
])("spreads a window's remaining quota over the window, in bursts of at most a twentieth of it: the key's other requests are not left a minute of 429s (this machine's clock %s the provider's)", async (_, skewMs) => {
  // The window is read on the provider's clock, as its Date tells it: taken as they came, a reset 11 minutes away (this
  // clock behind) spread 600 a minute over 11 minutes, and one 9 minutes past (ahead) read every window as over.
  const LIMIT = 600
  const clock = createManualClock('2026-03-01T05:00:00Z')
  const provider = await startWindowedProvider(clock, LIMIT, skewMs)
  const { sentAt } = provider
  const rt = await createTestRuntime({ clock, env: { VOICE_API_KEY: 'sk_live_x', VOICE_API_BASE_URL: provider.url } })
  const queue = startCallQueue(rt)
  const step = async (ms: number) => {
    await clock.advance(ms)
    await queue.idle()
  }
  try {
    // A first call tells the queue the window: 599 left for the next 60 s, about one every 100 ms.
    await enqueueCalls(rt, windowedCalls(0, 1))
    await vi.waitFor(async () => {
      await step(0)
      expect(sentAt.length).toBe(1)
    })
    // A quiet spell, then a campaign's follow-ups: a burst of at most a twentieth of what is left (29), then the pace.
    await step(20_000)
    await enqueueCalls(rt, windowedCalls(1, 400))
    await vi.waitFor(async () => {
      await step(0)
      expect(sentAt.length).toBeGreaterThan(1)
    })
    const burst = sentAt.length - 1
    expect(burst).toBeLessThanOrEqual(29)
    // Ten seconds on, ~100 more have gone (598 left over 40 s is 15 a second; the pace follows what is left).
    for (let i = 0; i < 100; i++) await step(100)
    const afterTen = sentAt.length - 1 - burst
    expect(afterTen).toBeGreaterThan(100)
    expect(afterTen).toBeLessThan(200)
    // Every call goes within the minute all the same, none refused: the quota is spread, not cut.
    await vi.waitFor(async () => {
      await step(500)
      expect(sentAt.length).toBe(401)
    }, { timeout: 20_000, interval: 10 })
    expect(sentAt.at(-1)! - sentAt[0]!).toBeLessThan(60_000)
    expect(provider.limited()).toBe(0)
  } finally {
    await queue.stop()
    await rt.close()
    await provider.close()
  }
  // 2–3 s alone; beside a whole suite and other work on two cores it took over the default 20 s.
}, 60_000)

it('at the start of each new window one call goes first, and the rest at the pace its answer sets: no send slot\'s worth at once', async () => {
  const LIMIT = 60
  const clock = createManualClock('2026-03-01T05:00:00Z')
  const provider = await startWindowedProvider(clock, LIMIT)
  const { sentAt } = provider
  const rt = await createTestRuntime({ clock, env: { VOICE_API_KEY: 'sk_live_x', VOICE_API_BASE_URL: provider.url } })
  const queue = startCallQueue(rt)
  try {
    await enqueueCalls(rt, windowedCalls(0, 150))
    // Three windows of 60: in the first 200 ms of each, at most the first call and a twentieth of what its answer leaves (2).
    await vi.waitFor(async () => {
      await clock.advance(200)
      await queue.idle()
      expect(sentAt.length).toBe(150)
    }, { timeout: 30_000, interval: 5 })
    for (const start of [provider.windowStartedAt, provider.windowStartedAt + 60_000, provider.windowStartedAt + 120_000]) {
      expect(sentAt.filter((at) => at >= start && at < start + 200).length).toBeLessThanOrEqual(3)
    }
    expect(provider.limited()).toBe(0)
  } finally {
    await queue.stop()
    await rt.close()
    await provider.close()
  }
})

/** Calls to distinct numbers, keys `k<from>`…, for the windowed provider's tests. */
function windowedCalls(from: number, n: number) {
  return Array.from({ length: n }, (_, i) => ({ apiKey: 'sk_live_x', request: { agent_id: 101, idempotency_key: `k${from + i}`, parameters: [{ name: 'customer_phone', value: `+919876${String(from + i).padStart(6, '0')}` }] } }))
}

/**
 * A provider with a fixed window of `limit` requests a minute on the shared clock, starting at the clock's time, telling
 * each answer what is left of it (X-RateLimit-Remaining/Reset) and answering 429 past it. `skewMs`: the provider's own
 * clock that far ahead of the shared one (negative: behind) — its Date, its windows and its resets all on it.
 */
async function startWindowedProvider(clock: ManualClock, limit: number, skewMs = 0) {
  const windowStartedAt = clock.now() + skewMs
  let windowStart = windowStartedAt
  let used = 0
  let limited = 0
  const sentAt: number[] = []
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const now = clock.now() + skewMs
      if (now >= windowStart + 60_000) {
        windowStart += Math.floor((now - windowStart) / 60_000) * 60_000
        used = 0
      }
      used++
      const headers = { 'content-type': 'application/json', date: new Date(now).toUTCString(), 'x-ratelimit-limit': String(limit), 'x-ratelimit-remaining': String(Math.max(0, limit - used)), 'x-ratelimit-reset': isoWithOffset(windowStart + 60_000) }
      if (used > limit) {
        limited++
        res.writeHead(429, { ...headers, 'retry-after': String(Math.ceil((windowStart + 60_000 - now) / 1000)) })
        return res.end(JSON.stringify({ error: { message: 'rate limit exceeded', type: 'rate_limit_exceeded' } }))
      }
      sentAt.push(now)
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { agent_id: number }
      res.writeHead(200, headers)
      res.end(JSON.stringify({ data: { agent_id: body.agent_id, conversation_id: null, scheduled_for: null, status: 'initiated', trace_id: `tr_${sentAt.length}` } }))
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sentAt,
    windowStartedAt,
    limited: () => limited,
    close: () => new Promise<void>((r) => server.close(() => r())),
  }
}
