import { afterEach, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/load.ts'
import { openStore } from '../../src/db/connect.ts'
import type { PipelineEvent } from '../../src/events/hooks.ts'
import { cacheInvalidationConsumer } from '../../src/proxy/invalidate-consumer.ts'
import { createRuntime, type Runtime } from '../../src/runtime.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { createSilentLogger } from '../../src/utils/logger.ts'
import { createSeededRandom } from '../../src/utils/random.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { ACME, phoneCall, proxyHarness, WEBHOOK_SECRET, type ProxyHarness } from './helpers.ts'
import { gate, scriptedUpstream, type ScriptedUpstream } from './scripted-upstream.ts'

const json = { 'content-type': 'application/json' }

/** A call.completed event for a conversation, as the webhook pipeline hands it to its consumers. */
const completed = (conversationId: string): PipelineEvent => ({
  eventId: `evt_${conversationId}`,
  eventType: 'call.completed',
  target: 'formant',
  source: 'webhook',
  receivedAt: 0,
  event: {
    event_id: `evt_${conversationId}`,
    event_type: 'call.completed',
    timestamp: '2026-03-18T20:53:30Z',
    data: {
      call: {
        agent_id: 101, call_parameters: {}, conversation_id: conversationId, duration_seconds: 10, started_at: null, ended_at: null,
        failure_reason: null, from_phone: null, to_phone: '+919876543210', recording_url: null, status: 'completed', trace_id: 'trace_1',
      },
      results: {},
    },
  },
})

describeEachDialect('proxy cache: an invalidation during a read in flight', (dialect) => {
  let h: ProxyHarness | undefined
  let up: ScriptedUpstream | undefined
  const cleanups: Array<() => Promise<void>> = []
  afterEach(async () => {
    for (const fn of cleanups.splice(0).reverse()) await fn()
    await h?.close()
    await up?.close()
    h = undefined
    up = undefined
  })

  const scripted = async () => {
    h = await proxyHarness({ dialect, upstreamUrl: async (sandboxUrl) => (up = await scriptedUpstream(sandboxUrl)).url })
    return { h, up: up! }
  }

  /** Holds the first upstream GET of `path` until the gate opens, answering it with `body`; relays the rest. */
  function holdFirst(up: ScriptedUpstream, path: string, body: string) {
    const held = gate()
    let first = true
    up.answer(async (req, _body, res) => {
      if (req.method !== 'GET' || req.url !== path || !first) return false
      first = false
      await held.wait
      res.writeHead(200, json)
      res.end(body)
    })
    return held
  }

  it('a list read that began before a call was placed is answered but not stored, and no later read joins it', async () => {
    const { h, up } = await scripted()
    const path = '/v1/conversations?limit=5'
    const before = JSON.stringify({ data: [], has_more: false, total: 0 })
    const held = holdFirst(up, path, before)
    const first = h.request(path)
    await expect.poll(() => up.count('GET', path)).toBe(1)

    expect((await h.call(phoneCall('+919876543210'))).status).toBe(200)
    // A read after the call has been answered asks upstream itself (it must see the call), while the first is still out.
    const second = await h.request(path)
    expect(up.count('GET', path)).toBe(2)
    expect(second.headers.get('x-cache')).toBe('MISS')
    const after = await second.text()
    expect(JSON.parse(after).total).toBe(1)

    held.open()
    const firstAnswer = await first
    expect(firstAnswer.headers.get('x-cache')).toBe('MISS')
    expect(await firstAnswer.text()).toBe(before)

    // The pre-call list did not replace the post-call one: what is cached is what the second read got.
    const next = await h.request(path)
    expect(next.headers.get('x-cache')).toBe('HIT')
    expect(await next.text()).toBe(after)
    expect(up.count('GET', path)).toBe(2)
  })

  it('a pre-call list in flight alone is not stored either: the next read after it is a MISS', async () => {
    const { h, up } = await scripted()
    const path = '/v1/conversations?limit=5'
    const before = JSON.stringify({ data: [], has_more: false, total: 0 })
    const held = holdFirst(up, path, before)
    const first = h.request(path)
    await expect.poll(() => up.count('GET', path)).toBe(1)
    expect((await h.call(phoneCall('+919876543210'))).status).toBe(200)
    held.open()
    expect(await (await first).text()).toBe(before)
    const next = await h.request(path)
    expect(next.headers.get('x-cache')).toBe('MISS')
    expect((await next.json()).total).toBe(1)
  })

  it('a webhook processed by another runtime on the same database, its clock an hour behind, still wins over a read that began before it', async () => {
    const { h, up } = await scripted()
    h.sandbox.seedConversations({ apiKey: ACME, agentId: 101, count: 1 })
    const id = (await (await h.direct('/v1/conversations?limit=1')).json()).data[0].conversation_id as string
    const path = '/v1/conversations?limit=5'
    // What the provider listed before the webhook: the conversation still in progress.
    const before = JSON.stringify({ data: [{ agent_id: 101, conversation_id: id, status: 'in_progress', trace_id: 'trace_1' }], has_more: false })
    const held = holdFirst(up, path, before)
    const first = h.request(path)
    await expect.poll(() => up.count('GET', path)).toBe(1)

    // The processing thread (or another replica): its own runtime and connection, and a clock that disagrees.
    const store = await openStore(h.rt.store.url, { schema: h.rt.store.schema })
    const other: Runtime = await createRuntime(loadConfig({ env: { DATA_DIR: h.rt.dataDir, WEBHOOK_SECRET, LOG_LEVEL: 'silent' } }), {
      store, skipMigrate: true, clock: createManualClock(h.clock.now() - 3_600_000), random: createSeededRandom(99), log: createSilentLogger(),
    })
    cleanups.push(async () => {
      await other.close()
      await store.close()
    })
    await cacheInvalidationConsumer(other)([completed(id)])

    held.open()
    expect(await (await first).text()).toBe(before)
    const next = await h.request(path)
    expect(next.headers.get('x-cache')).toBe('MISS')
    expect(await next.text()).not.toBe(before)
    expect((await h.request(path)).headers.get('x-cache')).toBe('HIT')
  })
})
