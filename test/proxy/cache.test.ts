import { afterEach, expect, it } from 'vitest'
import { DEMO_TENANTS } from '../../src/sandbox/index.ts'
import { drainDue } from '../../src/webhooks/index.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { ACME, DISABLED, GLOBEX, MADE_UP, phoneCall, proxyHarness, type ProxyHarness } from './helpers.ts'

describeEachDialect('proxy cache', (dialect) => {
  let h: ProxyHarness | undefined
  afterEach(async () => {
    await h?.close()
    h = undefined
  })

  /** Places a call through the proxy and lets the sandbox finish it; returns the conversation id. */
  async function finishedCall(h: ProxyHarness, phone: string): Promise<string> {
    const placed = await h.call(phoneCall(phone))
    expect(placed.status).toBe(200)
    await h.sandboxClock.advance(10 * 60_000)
    const list = await (await h.direct('/v1/conversations?limit=1')).json()
    return list.data[0].conversation_id as string
  }

  it('answers MISS then HIT, and a processed webhook invalidates the conversation (MISS again)', async () => {
    h = await proxyHarness({ dialect })
    const placed = await h.call(phoneCall('+919876543210'))
    const call = (await placed.json()).data
    expect(call).toMatchObject({ agent_id: 101, status: 'initiated', conversation_id: null })
    // The sandbox finishes the call and delivers call.completed to switchboard's receiver.
    await h.sandboxClock.advance(10 * 60_000)
    const id = (await (await h.direct('/v1/conversations?limit=1')).json()).data[0].conversation_id as string

    const first = await h.request(`/v1/conversations/${id}`)
    expect(first.status).toBe(200)
    expect(first.headers.get('x-cache')).toBe('MISS')
    expect(first.headers.get('x-ratelimit-limit')).toBe('600')
    const body = await first.json()
    expect(body.data).toMatchObject({ conversation_id: id, status: 'completed', trace_id: call.trace_id })

    const second = await h.request(`/v1/conversations/${id}`)
    expect(second.headers.get('x-cache')).toBe('HIT')
    expect(await second.json()).toEqual(body)
    // Cached answers do not replay a moment's rate-limit figures.
    expect(second.headers.get('x-ratelimit-remaining')).toBeNull()

    const listMiss = await h.request('/v1/conversations?agent_id=101&limit=5')
    expect(listMiss.headers.get('x-cache')).toBe('MISS')
    const listHit = await h.request('/v1/conversations?limit=5&agent_id=101')
    expect(listHit.headers.get('x-cache')).toBe('HIT')

    // The signed webhook reached the receiver; processing runs the proxy's invalidation hook.
    await expect.poll(async () => (await h!.rt.store.db.selectFrom('webhook_events').select('event_id').execute()).length, { timeout: 5000 }).toBeGreaterThan(0)
    const outcomes = await drainDue(h.rt)
    expect(outcomes.length).toBeGreaterThan(0)

    expect((await h.request(`/v1/conversations/${id}`)).headers.get('x-cache')).toBe('MISS')
    expect((await h.request('/v1/conversations?limit=5&agent_id=101')).headers.get('x-cache')).toBe('MISS')
    expect((await h.request(`/v1/conversations/${id}`)).headers.get('x-cache')).toBe('HIT')
  })

  it('keeps tenants apart: another tenant gets 404, a made-up or disabled key 401, even when cached', async () => {
    h = await proxyHarness({ dialect })
    const id = await finishedCall(h, '+919876543211')
    expect((await h.request(`/v1/conversations/${id}`)).headers.get('x-cache')).toBe('MISS')
    expect((await h.request(`/v1/conversations/${id}`)).headers.get('x-cache')).toBe('HIT')

    for (let i = 0; i < 2; i++) {
      const other = await h.request(`/v1/conversations/${id}`, { key: GLOBEX })
      expect(other.status).toBe(404)
      expect(await other.json()).toEqual({ error: { message: expect.any(String), type: 'not_found' } })
      expect(other.headers.get('x-cache')).toBe(i === 0 ? 'MISS' : 'HIT')
    }
    for (const key of [MADE_UP, DISABLED]) {
      const denied = await h.request(`/v1/conversations/${id}`, { key })
      expect(denied.status).toBe(401)
      expect(await denied.json()).toEqual({ error: { message: 'invalid or missing api key', type: 'authentication_error' } })
    }
    const none = await h.request(`/v1/conversations/${id}`, { key: null })
    expect(none.status).toBe(401)
    expect(none.headers.get('x-cache')).toBe('BYPASS')
    expect((await none.json()).error.type).toBe('authentication_error')
    // Raw keys are never stored.
    const stored = JSON.stringify(await h.rt.store.db.selectFrom('cache_entries').selectAll().execute()) + JSON.stringify(await h.rt.store.db.selectFrom('tenant_keys').selectAll().execute())
    for (const key of [ACME, GLOBEX, MADE_UP, DISABLED]) expect(stored).not.toContain(key)
  })

  it('re-confirms a key once the window has passed before serving cache to it', async () => {
    h = await proxyHarness({ dialect, env: { PROXY_KEY_WINDOW_SECONDS: '60' } })
    const id = await finishedCall(h, '+919876543212')
    await h.request(`/v1/conversations/${id}`)
    await h.clock.advance(30_000)
    expect((await h.request(`/v1/conversations/${id}`)).headers.get('x-cache')).toBe('HIT')
    await h.clock.advance(61_000)
    const before = h.sandbox.stats().requests
    // Past the window the request goes upstream (and confirms the key again).
    expect((await h.request(`/v1/conversations/${id}`)).headers.get('x-cache')).toBe('MISS')
    expect(h.sandbox.stats().requests).toBe(before + 1)
    expect((await h.request(`/v1/conversations/${id}`)).headers.get('x-cache')).toBe('HIT')
  })

  it('a key disabled after it was accepted gets 401 for its own cached data once the window has passed', async () => {
    const tenants = DEMO_TENANTS.map((t) => ({ ...t, agents: [...t.agents] }))
    h = await proxyHarness({ dialect, sandbox: { tenants } })
    const id = await finishedCall(h, '+919876543210')
    await h.request(`/v1/conversations/${id}`)
    tenants.find((t) => t.apiKey === ACME)!.disabled = true
    await h.clock.advance(61_000)
    const denied = await h.request(`/v1/conversations/${id}`)
    expect(denied.status).toBe(401)
    expect((await denied.json()).error.type).toBe('authentication_error')
    expect((await h.request(`/v1/conversations/${id}`)).status).toBe(401)
    // Refused keys get no STALE data either.
    await h.stopSandbox()
    expect((await h.request(`/v1/conversations/${id}`)).status).toBe(502)
  })

  it('serves STALE while the upstream is down, and 502 in the spec error shape when nothing is cached', async () => {
    h = await proxyHarness({ dialect })
    const id = await finishedCall(h, '+919876543213')
    const fresh = await (await h.request(`/v1/conversations/${id}`)).json()
    await h.request('/v1/conversations?limit=3')
    await h.stopSandbox()
    await h.clock.advance(25 * 60 * 60 * 1000)

    const stale = await h.request(`/v1/conversations/${id}`)
    expect(stale.status).toBe(200)
    expect(stale.headers.get('x-cache')).toBe('STALE')
    expect(await stale.json()).toEqual(fresh)
    expect((await h.request('/v1/conversations?limit=3')).headers.get('x-cache')).toBe('STALE')

    const nothing = await h.request('/v1/batch-calls?limit=3')
    expect(nothing.status).toBe(502)
    expect(nothing.headers.get('x-cache')).toBe('BYPASS')
    expect(await nothing.json()).toEqual({ error: { message: expect.stringContaining('cannot reach the provider'), type: 'internal_error' } })
    // A key never accepted gets no stale data.
    expect((await h.request(`/v1/conversations/${id}`, { key: GLOBEX })).status).toBe(502)
    // A call is told the same, without the provider's address (VOICE_API_BASE_URL, named to any caller, its key unchecked).
    const placing = h.request('/v1/call', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543215' }] }), key: GLOBEX })
    let call: Response | undefined
    // Its retries wait on the harness's clock: moved on until they are spent.
    for (let i = 0; i < 600 && !call; i++) call = await Promise.race([placing, h.clock.advance(1_000).then(() => undefined)])
    call ??= await placing
    expect(call.status).toBe(502)
    expect(await call.json()).toEqual({ error: { message: 'cannot reach the provider (ECONNREFUSED)', type: 'internal_error' } })
  })

  it('serves STALE on an upstream 5xx and passes the 5xx through when nothing is cached', async () => {
    h = await proxyHarness({ dialect })
    const id = await finishedCall(h, '+919876543214')
    await h.request(`/v1/conversations/${id}`)
    await h.clock.advance(25 * 60 * 60 * 1000)
    h.sandbox.failNextRequests(2)
    const stale = await h.request(`/v1/conversations/${id}`)
    expect(stale.headers.get('x-cache')).toBe('STALE')
    expect(stale.status).toBe(200)
    const passed = await h.request('/v1/batch-calls')
    expect(passed.status).toBe(500)
    expect(passed.headers.get('x-cache')).toBe('MISS')
    expect((await passed.json()).error.type).toBe('internal_error')
  })

  it('serves the kept copy STALE when the provider answers 429, with its back-off; a read with nothing kept gets the 429', async () => {
    h = await proxyHarness({ dialect, sandbox: { rateLimit: 5 } })
    const id = await finishedCall(h, '+919876543216')
    const kept = await h.request(`/v1/conversations/${id}`)
    expect(kept.headers.get('x-cache')).toBe('MISS')
    const body = await kept.json()
    // The key's quota used up; switchboard's key window lapses while the entry (terminal: 24 h) is still fresh.
    while ((await h.direct('/v1/conversations?limit=2')).status !== 429);
    await h.clock.advance(61_000)
    const served = await h.request(`/v1/conversations/${id}`)
    expect(served.status).toBe(200)
    expect(served.headers.get('x-cache')).toBe('STALE')
    expect(await served.json()).toEqual(body)
    expect(Number(served.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(served.headers.get('x-ratelimit-remaining')).toBe('0')
    const nothing = await h.request('/v1/batch-calls?limit=7')
    expect(nothing.status).toBe(429)
    expect(nothing.headers.get('x-cache')).toBe('MISS')
    // A key never accepted gets no kept copy for a 429 either.
    expect((await h.request(`/v1/conversations/${id}`, { key: GLOBEX })).status).not.toBe(200)
  })

  it('caches a non-terminal conversation only briefly and a 404 at most briefly', async () => {
    h = await proxyHarness({ dialect })
    await h.call(phoneCall('+919876543210'))
    const id = (await (await h.direct('/v1/conversations?limit=1')).json()).data[0].conversation_id as string
    const live = await h.request(`/v1/conversations/${id}`)
    expect((await live.json()).data.status).not.toBe('completed')
    expect((await h.request(`/v1/conversations/${id}`)).headers.get('x-cache')).toBe('HIT')
    await h.clock.advance(5_001)
    expect((await h.request(`/v1/conversations/${id}`)).headers.get('x-cache')).toBe('MISS')

    const missing = '00000000-0000-4000-8000-000000000000_1'
    expect((await h.request(`/v1/conversations/${missing}`)).status).toBe(404)
    expect((await h.request(`/v1/conversations/${missing}`)).headers.get('x-cache')).toBe('HIT')
    await h.clock.advance(5_001)
    expect((await h.request(`/v1/conversations/${missing}`)).headers.get('x-cache')).toBe('MISS')
  })

  it('stays within PROXY_CACHE_MAX_BYTES by evicting the least recently used entries', async () => {
    h = await proxyHarness({ dialect, env: { PROXY_CACHE_MAX_BYTES: '20000' } })
    h.sandbox.seedConversations({ apiKey: ACME, agentId: 101, count: 60 })
    const ids = (await (await h.direct('/v1/conversations?limit=60')).json()).data.map((c: { conversation_id: string }) => c.conversation_id) as string[]
    for (const id of ids) {
      await h.request(`/v1/conversations/${id}`)
      await h.clock.advance(1_100)
    }
    const { total } = await h.rt.store.db
      .selectFrom('cache_entries')
      .select((eb) => eb.fn.sum<number>('size').as('total'))
      .executeTakeFirstOrThrow()
    expect(Number(total)).toBeLessThanOrEqual(20000)
    // The newest entry survived, the oldest went.
    expect((await h.request(`/v1/conversations/${ids.at(-1)}`)).headers.get('x-cache')).toBe('HIT')
    expect((await h.request(`/v1/conversations/${ids[0]}`)).headers.get('x-cache')).toBe('MISS')
  })
})
