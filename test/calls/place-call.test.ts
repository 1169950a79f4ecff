import { createServer, type Server } from 'node:http'
import { afterEach, expect, it } from 'vitest'
import { placeCall } from '../../src/calls/place-call.ts'
import { tenantOf } from '../../src/calls/tenant.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { ACME, GLOBEX, phoneCall, proxyHarness, withClock, type ProxyHarness } from '../proxy/helpers.ts'

/**
 * A network between switchboard and the sandbox that loses answers: it forwards every request, and for
 * the first `lose` POST /v1/call requests replaces the provider's answer with a 502 after the provider
 * has acted on it (the ambiguous failure idempotency keys exist for).
 */
async function lossyRelay(sandboxUrl: string, lose: number) {
  let lost = 0
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', async () => {
      const upstream = await fetch(`${sandboxUrl}${req.url}`, {
        method: req.method,
        headers: Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k)).map(([k, v]) => [k, String(v)])),
        body: chunks.length ? Buffer.concat(chunks) : undefined,
      })
      const body = Buffer.from(await upstream.arrayBuffer())
      if (req.method === 'POST' && req.url === '/v1/call' && lost < lose) {
        lost++
        res.writeHead(502, { 'content-type': 'text/html' })
        return res.end('<html>bad gateway</html>')
      }
      res.writeHead(upstream.status, Object.fromEntries(upstream.headers))
      res.end(body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  return { url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`, close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))) }
}

describeEachDialect('placeCall and the calls ledger', (dialect) => {
  let h: ProxyHarness | undefined
  let relay: Awaited<ReturnType<typeof lossyRelay>> | undefined
  afterEach(async () => {
    await h?.close()
    await relay?.close()
    h = undefined
    relay = undefined
  })

  it('a repeated idempotency key reaches upstream once; the second is answered 409 locally', async () => {
    h = await proxyHarness({ dialect })
    const body = phoneCall('+919876543210', { idempotency_key: 'order-42' })
    const first = await h.call(body)
    expect(first.status).toBe(200)
    const requests = h.sandbox.stats().requests
    const second = await h.call(body)
    expect(second.status).toBe(409)
    expect(await second.json()).toEqual({ error: { message: 'idempotency key already used', type: 'duplicate_request' } })
    expect(h.sandbox.stats().requests).toBe(requests)
    expect(h.sandbox.stats().callsAccepted).toBe(1)
    // Same key, other tenant or other agent: a different call.
    expect((await h.call(phoneCall('+919876543211', { idempotency_key: 'order-42' }, 201), GLOBEX)).status).toBe(200)
    expect((await h.call(phoneCall('+919876543212', { idempotency_key: 'order-42' }, 103))).status).toBe(200)
    expect(h.sandbox.stats().callsAccepted).toBe(3)
  })

  it('concurrent requests with one key place one call', async () => {
    h = await proxyHarness({ dialect })
    const body = phoneCall('+919876543210', { idempotency_key: 'race' })
    const answers = await Promise.all([h.call(body), h.call(body), h.call(body), h.call(body)])
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409, 409, 409])
    expect(h.sandbox.stats().callsAccepted).toBe(1)
  })

  it('injected upstream 500s are retried with the same key and still create exactly one call', async () => {
    h = await proxyHarness({ dialect })
    h.sandbox.failNextRequests(2)
    const res = await withClock(h.clock, h.call(phoneCall('+919876543210')))
    expect(res.status).toBe(200)
    const { data } = await res.json()
    expect(h.sandbox.stats().requestsByStatus[500]).toBe(2)
    expect(h.sandbox.stats().callsAccepted).toBe(1)
    const rows = await h.rt.store.db.selectFrom('calls').selectAll().execute()
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ status: 'initiated', trace_id: data.trace_id, error: null })
    // The key the proxy added is the one every attempt carried, and the caller can see it.
    expect(res.headers.get('x-idempotency-key')).toBe(rows[0]!.idempotency_key)
  })

  it('random upstream_500 faults: every call created exactly once', async () => {
    h = await proxyHarness({ dialect })
    h.sandbox.setFaults({ upstream500: 0.3 })
    const statuses: number[] = []
    for (let i = 0; i < 8; i++) {
      const res = await withClock(h.clock, h.call(phoneCall(`+91987654320${i}`, { idempotency_key: `k-${i}` }, 103)))
      statuses.push(res.status)
    }
    const accepted = statuses.filter((s) => s === 200).length
    expect(accepted).toBeGreaterThan(0)
    expect(h.sandbox.stats().callsAccepted).toBe(accepted)
    const conversations = (await (await h.direct('/v1/conversations?limit=100')).json()).total
    expect(conversations).toBe(accepted)
  })

  it('an answer lost after the provider placed the call: the retry gets 409, recorded honestly as initiated', async () => {
    h = await proxyHarness({ dialect, upstreamUrl: async (url) => (relay = await lossyRelay(url, 1)).url })
    const res = await withClock(h.clock, h.call(phoneCall('+919876543210', { idempotency_key: 'lost-1' })))
    expect(res.status).toBe(200)
    expect(res.headers.get('x-switchboard-recovered')).toBe('true')
    expect((await res.json()).data).toEqual({ agent_id: 101, conversation_id: null, scheduled_for: null, status: 'initiated', trace_id: '' })
    expect(h.sandbox.stats().callsAccepted).toBe(1)
    const row = await h.rt.store.db.selectFrom('calls').selectAll().executeTakeFirstOrThrow()
    expect(row).toMatchObject({ status: 'initiated', trace_id: null, idempotency_key: 'lost-1' })
    expect(row.error).toMatch(/trace id unknown/)
  })

  it('after a failure with every retry lost, the caller retries with the same key and the provider decides', async () => {
    h = await proxyHarness({ dialect, upstreamUrl: async (url) => (relay = await lossyRelay(url, 4)).url })
    const failed = await withClock(h.clock, h.call(phoneCall('+919876543210', { idempotency_key: 'lost-all' })))
    expect(failed.status).toBe(502)
    expect(await failed.json()).toEqual({ error: { message: 'HTTP 502 with no error body', type: 'internal_error' } })
    expect((await h.rt.store.db.selectFrom('calls').select('status').executeTakeFirstOrThrow()).status).toBe('failed')
    expect(h.sandbox.stats().callsAccepted).toBe(1)
    // A failed (ambiguous) row is not a local duplicate: the request goes upstream, which knows the key.
    const again = await withClock(h.clock, h.call(phoneCall('+919876543210', { idempotency_key: 'lost-all' })))
    expect(again.status).toBe(200)
    expect(again.headers.get('x-switchboard-recovered')).toBe('true')
    expect(h.sandbox.stats().callsAccepted).toBe(1)
    expect((await h.rt.store.db.selectFrom('calls').select('status').executeTakeFirstOrThrow()).status).toBe('initiated')
  })

  it('an answer lost, then a 429: recorded failed (not rejected), so the retry with the key recovers the placed call', async () => {
    // One request a minute: the first attempt is carried out (its answer lost), the retry is refused 429.
    h = await proxyHarness({ dialect, sandbox: { rateLimit: 1 }, env: { PROXY_KEY_WINDOW_SECONDS: '3600' }, upstreamUrl: async (url) => (relay = await lossyRelay(url, 1)).url })
    // The key accepted first, for the whole test (a read, then the minute it used up): the calls' are the only requests
    // the limit meets.
    expect((await h.request('/v1/conversations?limit=1')).status).toBe(200)
    await h.sandboxClock.advance(61_000)
    await h.clock.advance(1_000)
    const first = await withClock(h.clock, h.call(phoneCall('+919876543210', { idempotency_key: 'lost-then-429' })))
    expect(first.status).toBe(429)
    await first.arrayBuffer()
    expect(h.sandbox.stats().callsAccepted).toBe(1)
    expect((await h.rt.store.db.selectFrom('calls').select('status').executeTakeFirstOrThrow()).status).toBe('failed')
    // The caller waits out the minute and retries with the same key, as told: the call exists, and is not placed again.
    await h.sandboxClock.advance(61_000)
    await h.clock.advance(61_000)
    const again = await withClock(h.clock, h.call(phoneCall('+919876543210', { idempotency_key: 'lost-then-429' })))
    expect(again.status).toBe(200)
    expect(again.headers.get('x-switchboard-recovered')).toBe('true')
    expect(h.sandbox.stats().callsAccepted).toBe(1)
  })

  it('a process killed mid-send: its pending row is taken over after a minute and the provider decides, the call placed once', async () => {
    h = await proxyHarness({ dialect })
    // The killed process had written its row and sent the call; the provider placed it; its answer died with the process.
    const request = phoneCall('+919876543210', { idempotency_key: 'killed-mid-send' })
    const sent = await fetch(`${h.sandboxUrl}/v1/call`, { method: 'POST', headers: { authorization: `Bearer ${ACME}`, 'content-type': 'application/json' }, body: JSON.stringify(request) })
    expect(sent.status).toBe(200)
    const now = h.clock.now()
    await h.rt.store.db
      .insertInto('calls')
      .values({ id: 'call-killed', tenant: tenantOf(ACME), agent_id: 101, customer_phone: '+919876543210', idempotency_key: 'killed-mid-send', trace_id: null, conversation_id: null, previous_conversation_id: null, scheduled_for: null, parameters: '[]', retry_context: null, metadata: null, recipe: null, campaign: null, status: 'pending', error: null, created_at: now, updated_at: now })
      .execute()
    // While it could still be in flight: 409, saying so, with when to ask again.
    const early = await h.call(request)
    expect(early.status).toBe(409)
    expect(early.headers.get('retry-after')).toBe('60')
    expect((await early.json()).error.message).toMatch(/is being placed; retry with the same key in a minute/)
    await h.clock.advance(61_000)
    const later = await withClock(h.clock, h.call(request))
    expect(later.status).toBe(200)
    expect(later.headers.get('x-switchboard-recovered')).toBe('true')
    expect(h.sandbox.stats().callsAccepted).toBe(1)
    expect((await h.rt.store.db.selectFrom('calls').select('status').executeTakeFirstOrThrow()).status).toBe('initiated')
  })

  it('records recipe, campaign and chain; a refused key can be retried; after 24 h a key may be used again', async () => {
    h = await proxyHarness({ dialect })
    const request = { agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543210' }, { name: 'first_name', value: 'Asha' }], retry_context: { retry_stage_id: 'verify' }, metadata: 'm-1', idempotency_key: 'nightly-1' }
    const first = await placeCall(h.rt, { apiKey: ACME, request, recipe: 'nightly-batch', campaign: 'spring', previousConversationId: 'abc_1' })
    expect(first.ok).toBe(true)
    if (!first.ok) return
    expect(first.record).toMatchObject({
      tenant: tenantOf(ACME), agent_id: 101, customer_phone: '+919876543210', idempotency_key: 'nightly-1', recipe: 'nightly-batch', campaign: 'spring',
      previous_conversation_id: 'abc_1', parameters: request.parameters, retry_context: { retry_stage_id: 'verify' }, metadata: 'm-1', status: 'initiated', trace_id: first.call.trace_id,
    })
    expect(first.headers.get('x-ratelimit-limit')).toBe('600')

    const dup = await placeCall(h.rt, { apiKey: ACME, request })
    expect(dup).toMatchObject({ ok: false, duplicate: true, record: { id: first.record.id } })

    // Refused by the provider (agent 102 has no number): the same key may be sent again.
    const refused = await placeCall(h.rt, { apiKey: ACME, request: { ...request, agent_id: 102 } })
    expect(refused).toMatchObject({ ok: false, duplicate: false, record: { status: 'rejected' } })
    if (!refused.ok && !refused.duplicate) expect(refused.error).toMatchObject({ status: 400, type: 'invalid_request', message: 'agent has no phone number configured' })
    const refusedAgain = await placeCall(h.rt, { apiKey: ACME, request: { ...request, agent_id: 102 } })
    expect(refusedAgain).toMatchObject({ ok: false, duplicate: false })

    // 24 h later (both clocks) the key is free again, upstream and here; the row is reused.
    await h.clock.advance(24 * 3600_000 + 1)
    await h.sandboxClock.advance(24 * 3600_000 + 1)
    const later = await placeCall(h.rt, { apiKey: ACME, request })
    expect(later.ok).toBe(true)
    expect(await h.rt.store.db.selectFrom('calls').select('id').where('idempotency_key', '=', 'nightly-1').where('agent_id', '=', 101).execute()).toHaveLength(1)
    expect(h.sandbox.stats().callsAccepted).toBe(2)
  })

  it('adds an idempotency key when the caller sent none', async () => {
    h = await proxyHarness({ dialect })
    const a = await placeCall(h.rt, { apiKey: ACME, request: phoneCall('+919876543210') })
    const b = await placeCall(h.rt, { apiKey: ACME, request: phoneCall('+919876543210') })
    expect(a.ok && b.ok).toBe(true)
    if (!a.ok || !b.ok) return
    expect(a.record.idempotency_key).toMatch(/^[0-9a-f-]{36}$/)
    expect(a.record.idempotency_key).not.toBe(b.record.idempotency_key)
  })
})
