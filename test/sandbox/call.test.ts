import { afterEach, describe, expect, it } from 'vitest'
import { ACME, GLOBEX, harness, phoneCall, type Harness } from './helpers.ts'

let h: Harness
afterEach(async () => h && (await h.sb.close()))

describe('POST /v1/call', () => {
  it('answers an immediate call with the exact provider serialization', async () => {
    h = harness()
    const res = await h.call(phoneCall('+919876543210'))
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/json')
    const text = await res.text()
    expect(text).toMatch(
      /^\{"data":\{"agent_id":101,"conversation_id":null,"scheduled_for":null,"status":"initiated","trace_id":"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"\}\}$/,
    )
  })

  it('takes a scheduled_for up to a minute in the past as now: an immediate call, under the immediate call limits', async () => {
    h = harness({ numberLimit: 1 })
    const past = new Date(h.clock.now() - 30_000).toISOString()
    const res = await h.call({ ...phoneCall('+919876543210'), scheduled_for: past })
    expect(res.status).toBe(200)
    expect((await h.json(res)).data).toMatchObject({ status: 'initiated', scheduled_for: null })
    // The number's own rate limit applies to it, as to any immediate call.
    const again = await h.call({ ...phoneCall('+919876543210'), scheduled_for: past })
    expect(again.status).toBe(429)
    expect((await h.json(again)).error.message).toBe('rate limit exceeded for this number')
  })

  it('refuses a body over 1 MB with 400 instead of reading any size into memory', async () => {
    h = harness()
    const res = await h.call({ ...phoneCall('+919876543210'), metadata: 'x'.repeat(2 * 1024 * 1024) })
    expect(res.status).toBe(400)
    expect((await h.json(res)).error).toEqual({ message: 'request body is larger than 1025 KB', type: 'invalid_request' })
  })

  it.each([
    ['{"agent_id":', /^request body is not valid JSON/],
    ['[1,2]', /^request body must be a JSON object$/],
    ['{}', /^agent_id is required$/],
    [JSON.stringify({ agent_id: '101', parameters: [] }), /^agent_id must be an integer$/],
    [JSON.stringify({ agent_id: 101.5, parameters: [] }), /^agent_id must be an integer$/],
    [JSON.stringify({ agent_id: 101 }), /^customer_phone parameter is required$/],
    [JSON.stringify({ agent_id: 101, parameters: [{ name: 'x', value: '1' }] }), /^customer_phone parameter is required$/],
    [JSON.stringify({ agent_id: 101, parameters: [{ name: 'customer_phone', value: '  ' }] }), /^customer_phone parameter is required$/],
    [JSON.stringify({ agent_id: 101, parameters: 'x' }), /^parameters must be an array/],
    [JSON.stringify({ agent_id: 101, parameters: [{ name: 'customer_phone', value: 5 }] }), /^parameters\[0\] must be an object/],
    [JSON.stringify({ ...phoneCall('+911'), idempotency_key: 7 }), /^idempotency_key must be a non-empty string$/],
    [JSON.stringify({ ...phoneCall('+911'), metadata: { a: 1 } }), /^metadata must be a string or an object of string values$/],
    [JSON.stringify({ ...phoneCall('+911'), retry_context: 'x' }), /^retry_context must be an object$/],
    [JSON.stringify({ ...phoneCall('+911'), conversation_id: 3 }), /^conversation_id must be a string$/],
    [JSON.stringify({ ...phoneCall('+911'), scheduled_for: 'tomorrow' }), /^scheduled_for must be an ISO 8601 datetime/],
    [JSON.stringify({ ...phoneCall('+911'), scheduled_for: '2026-03-18T20:00:00' }), /^scheduled_for must be an ISO 8601 datetime/],
    // A day that does not exist (Date.parse would roll it over into March), as the provider refuses "an invalid schedule time".
    [JSON.stringify({ ...phoneCall('+911'), scheduled_for: '2026-02-29T10:00:00Z' }), /^scheduled_for must be an ISO 8601 datetime/],
    [JSON.stringify({ ...phoneCall('+911'), scheduled_for: '2026-02-31T10:00:00+05:30' }), /^scheduled_for must be an ISO 8601 datetime/],
  ])('rejects %s with 400 invalid_request', async (body, message) => {
    h = harness()
    const res = await h.call(body)
    expect(res.status).toBe(400)
    const err = (await h.json(res)).error
    expect(err.type).toBe('invalid_request')
    expect(err.message).toMatch(message)
    expect(h.sb.stats().callsAccepted).toBe(0)
  })

  it('requires a JSON content type', async () => {
    h = harness()
    const res = await h.request('/v1/call', { method: 'POST', body: JSON.stringify(phoneCall('+911')), headers: { 'content-type': 'text/plain' } })
    expect(res.status).toBe(400)
    expect((await h.json(res)).error.message).toBe('Content-Type must be application/json')
  })

  it('answers the spec messages for agents: not found (also another tenant’s) and no phone number', async () => {
    h = harness()
    for (const [body, key] of [[phoneCall('+911', {}, 999), ACME], [phoneCall('+911', {}, 201), ACME], [phoneCall('+911', {}, 101), GLOBEX]] as const) {
      const res = await h.call(body, key)
      expect(res.status).toBe(404)
      expect(await h.json(res)).toEqual({ error: { message: 'agent not found', type: 'not_found' } })
    }
    const res = await h.call(phoneCall('+911', {}, 102))
    expect(res.status).toBe(400)
    expect(await h.json(res)).toEqual({ error: { message: 'agent has no phone number configured', type: 'invalid_request' } })
  })

  it('authenticates: missing, unknown and disabled keys get 401 with the provider message and no rate headers', async () => {
    h = harness()
    for (const key of [null, 'sk_test_nope', 'sk_test_disabled']) {
      const res = await h.request('/v1/conversations', { key })
      expect(res.status).toBe(401)
      expect(await h.json(res)).toEqual({ error: { message: 'invalid or missing api key', type: 'authentication_error' } })
      expect(res.headers.get('x-ratelimit-limit')).toBeNull()
    }
    const res = await h.request('/v1/conversations', { key: null, headers: { authorization: 'Basic c2s=' } })
    expect(res.status).toBe(401)
  })

  it('answers unknown routes 404 and wrong methods 405 in the error shape', async () => {
    h = harness()
    let res = await h.request('/v1/calls')
    expect(res.status).toBe(404)
    expect((await h.json(res)).error).toEqual({ message: 'no such endpoint: GET /v1/calls', type: 'not_found' })
    res = await h.request('/v1/conversations', { method: 'POST' })
    expect(res.status).toBe(405)
    expect(res.headers.get('allow')).toBe('GET, HEAD')
    expect((await h.json(res)).error.type).toBe('invalid_request')
  })

  describe('idempotency (tenant + agent, 24 h)', () => {
    it('answers 409 duplicate_request within the window and accepts the key again after it', async () => {
      h = harness()
      const body = phoneCall('+919876543210', { idempotency_key: 'k-1' })
      expect((await h.call(body)).status).toBe(200)
      await h.clock.advance(24 * 3600_000 - 1)
      const dup = await h.call(body)
      expect(dup.status).toBe(409)
      expect(await h.json(dup)).toEqual({ error: { message: 'idempotency key already used', type: 'duplicate_request' } })
      await h.clock.advance(1)
      expect((await h.call(body)).status).toBe(200)
      expect(h.sb.stats().callsAccepted).toBe(2)
    })

    it('upstream_500_after places the call, then answers 500: a retry with the same key meets it (409), one call in all', async () => {
      h = harness({ faults: { webhookDuplicate: 0, webhookDrop: 0, webhookReorder: 0, upstream500: 0, upstream500After: 1, latencyMs: 0 } })
      const body = phoneCall('+919876543210', { idempotency_key: 'k-lost' })
      const lost = await h.call(body)
      expect(lost.status).toBe(500)
      expect(await h.json(lost)).toEqual({ error: { message: 'internal server error after the request was carried out (injected by SANDBOX_FAULTS)', type: 'internal_error' } })
      expect(lost.headers.get('x-ratelimit-limit')).not.toBeNull()
      h.sb.setFaults({ upstream500After: 0 })
      const retry = await h.call(body)
      expect(retry.status).toBe(409)
      expect(h.sb.stats().callsAccepted).toBe(1)
    })

    it('forgets keys once their window has passed, without scanning the ones still in it', async () => {
      h = harness()
      for (let i = 0; i < 5; i++) expect((await h.call(phoneCall(`+91100000000${i}`, { idempotency_key: `old-${i}` }))).status).toBe(200)
      await h.clock.advance(12 * 3600_000)
      // Re-using a key inside its window is refused and does not move it.
      expect((await h.call(phoneCall('+911000000000', { idempotency_key: 'old-0' }))).status).toBe(409)
      for (let i = 0; i < 3; i++) expect((await h.call(phoneCall(`+91200000000${i}`, { idempotency_key: `new-${i}` }))).status).toBe(200)
      expect(h.sb.stats().idempotencyKeys).toBe(8)
      await h.clock.advance(12 * 3600_000)
      // The first five have expired: the next call's key drops them, and the last three are kept.
      expect((await h.call(phoneCall('+913000000000', { idempotency_key: 'later' }))).status).toBe(200)
      expect(h.sb.stats().idempotencyKeys).toBe(4)
      expect((await h.call(phoneCall('+912000000000', { idempotency_key: 'new-0' }))).status).toBe(409)
      expect((await h.call(phoneCall('+911000000000', { idempotency_key: 'old-0' }))).status).toBe(200)
    })

    it('scopes keys to tenant and agent', async () => {
      h = harness()
      expect((await h.call(phoneCall('+911', { idempotency_key: 'same' }, 101))).status).toBe(200)
      expect((await h.call(phoneCall('+912', { idempotency_key: 'same' }, 103))).status).toBe(200)
      expect((await h.call(phoneCall('+913', { idempotency_key: 'same' }, 201), GLOBEX)).status).toBe(200)
      expect((await h.call(phoneCall('+914', { idempotency_key: 'same' }, 103))).status).toBe(409)
    })

    it('does not use up a key on a rejected call, so a retry after 429 goes through', async () => {
      h = harness({ maxCalls: 1 })
      expect((await h.call(phoneCall('+910'))).status).toBe(200)
      const body = phoneCall('+911', { idempotency_key: 'retry-me' })
      expect((await h.call(body)).status).toBe(429)
      await h.clock.advance(10_000) // the first call ends
      expect((await h.call(body)).status).toBe(200)
      expect((await h.call(body)).status).toBe(409)
    })

    it('an injected 500 happens before any side effect: the retry with the same key creates exactly one call', async () => {
      h = harness()
      h.sb.failNextRequests(1)
      const body = phoneCall('+919876543210', { idempotency_key: 'once' })
      const first = await h.call(body)
      expect(first.status).toBe(500)
      expect((await h.json(first)).error.type).toBe('internal_error')
      expect((await h.call(body)).status).toBe(200)
      expect((await h.call(body)).status).toBe(409)
      expect(h.sb.stats().callsStarted).toBe(1)
    })
  })

  describe('scheduling horizon', () => {
    it('accepts up to 30 days ahead, refuses beyond and in the past', async () => {
      h = harness()
      const now = h.clock.now()
      const at = (ms: number) => new Date(now + ms).toISOString()
      const ok = await h.call(phoneCall('+911', { scheduled_for: at(30 * 86_400_000) }))
      expect(ok.status).toBe(200)
      expect((await h.json(ok)).data).toMatchObject({ status: 'scheduled', conversation_id: null, scheduled_for: at(30 * 86_400_000) })
      const far = await h.call(phoneCall('+911', { scheduled_for: at(30 * 86_400_000 + 1000) }))
      expect(far.status).toBe(400)
      expect((await h.json(far)).error).toEqual({ message: 'scheduled_for must be within the next 30 days', type: 'invalid_request' })
      const past = await h.call(phoneCall('+911', { scheduled_for: at(-3600_000) }))
      expect(past.status).toBe(400)
      expect((await h.json(past)).error.message).toBe('scheduled_for must be in the future')
    })

    it('starts a scheduled call at its (real, unscaled) time, even 30 days out', async () => {
      h = harness()
      const at = h.clock.now() + 30 * 86_400_000
      await h.call(phoneCall('+919876543210', { scheduled_for: new Date(at).toISOString() }))
      await h.clock.advanceTo(at - 1)
      expect(h.sb.stats()).toMatchObject({ callsStarted: 0, conversations: 0 })
      await h.clock.advanceTo(at)
      expect(h.sb.stats()).toMatchObject({ callsStarted: 1, conversations: 1 })
      const list = await h.json(await h.request('/v1/conversations'))
      expect(list.data[0].start_timestamp).toBe(at)
    })
  })
})

// A client that gives up mid-body (its own timeout, a stopped process) is not the sandbox failing: no error line each.
it('a request its client aborts while the body is read is logged at debug, not as a handler failure', async () => {
  const { captureLogs } = await import('../helpers/log-capture.ts')
  const capture = captureLogs('debug')
  h = harness({ log: capture.log })
  const controller = new AbortController()
  const body = new ReadableStream<Uint8Array>({
    start(stream) {
      stream.enqueue(new TextEncoder().encode('{"agent_id": 101, "parame'))
      controller.signal.addEventListener('abort', () => stream.error(new DOMException('This operation was aborted', 'AbortError')))
    },
  })
  const pending = h.sb.fetch(new Request('http://sandbox.test/v1/call', {
    method: 'POST', body, signal: controller.signal, duplex: 'half', headers: { authorization: `Bearer ${ACME}`, 'content-type': 'application/json' },
  } as RequestInit))
  await new Promise((resolve) => setTimeout(resolve, 10))
  controller.abort()
  expect((await pending).status).toBe(400)
  expect(capture.find(/handler failed/)).toEqual([])
  expect(capture.find(/aborted by its client/)).toEqual([expect.objectContaining({ level: 20, path: '/v1/call' })])
})
