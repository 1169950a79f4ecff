import { afterEach, describe, expect, it } from 'vitest'
import { VoiceApiError } from '../../src/upstream/errors.ts'
import { phone, startContract, type Contract } from './harness.ts'

let c: Contract
afterEach(async () => c?.close())

async function failure(p: Promise<unknown>): Promise<VoiceApiError> {
  const error = await p.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(VoiceApiError)
  return error as VoiceApiError
}

const requests = () => c.sandbox.stats().requests

describe('contract: the spec’s Errors table (each row, through the client)', () => {
  it('400 invalid_request — not retried', async () => {
    c = await startContract()
    const before = requests()
    const e = await failure(c.client().createCall({ agent_id: 101, parameters: [{ name: 'name', value: 'x' }] }))
    expect([e.status, e.type, e.message]).toEqual([400, 'invalid_request', 'customer_phone parameter is required'])
    const e2 = await failure(c.client().createCall({ agent_id: 101, parameters: phone('+911'), scheduled_for: 'soon' }))
    expect([e2.status, e2.type]).toEqual([400, 'invalid_request'])
    expect(requests() - before).toBe(2)
  })

  it('401 authentication_error — missing, invalid or disabled key; not retried', async () => {
    c = await startContract()
    const before = requests()
    for (const key of ['sk_test_disabled', 'sk_live_unknown']) {
      const e = await failure(c.client(key).listConversations())
      expect([e.status, e.type, e.message]).toEqual([401, 'authentication_error', 'invalid or missing api key'])
    }
    const raw = await fetch(`${c.baseUrl}/v1/conversations`)
    expect(raw.status).toBe(401)
    expect(requests() - before).toBe(3)
  })

  it('404 not_found — missing resource, another tenant’s resource, missing recording; not retried', async () => {
    c = await startContract()
    const acme = c.client()
    const globex = c.client('sk_test_globex')
    const before = requests()
    expect((await failure(acme.createCall({ agent_id: 201, parameters: phone('+911') }))).message).toBe('agent not found')
    const call = await globex.createCall({ agent_id: 201, parameters: phone('+919876543216') })
    expect(call.status).toBe('initiated')
    await c.clock.advance(60_000)
    const [theirs] = (await globex.listConversations()).data
    for (const p of [
      acme.getConversation(theirs!.conversation_id),
      acme.getBatch(999_999),
      acme.getBatchMetrics(999_999),
      acme.getTranscriptionJob('job_nope'),
    ]) {
      const e = await failure(p)
      expect([e.status, e.type]).toEqual([404, 'not_found'])
    }
    // Recordings: the error body of a streamed download comes back typed too; checked over the wire as well.
    for (const [client, key] of [[acme, 'sk_test_acme'], [globex, 'sk_test_globex']] as const) {
      const e = await failure(client.downloadRecording(theirs!.conversation_id)) // acme: not theirs; globex: busy, no recording
      expect([e.status, e.type]).toEqual([404, 'not_found'])
      const raw = await fetch(`${c.baseUrl}/v1/conversations/${theirs!.conversation_id}/recording`, { headers: { authorization: `Bearer ${key}` } })
      expect(raw.status).toBe(404)
      expect((await raw.json()).error.type).toBe('not_found')
    }
    expect(requests() - before).toBe(1 + 1 + 1 + 4 + 4)
  })

  it('409 duplicate_request — the same idempotency key for the same tenant + agent', async () => {
    c = await startContract()
    const client = c.client()
    await client.createCall({ agent_id: 101, parameters: phone('+911'), idempotency_key: 'dup' })
    const e = await failure(client.createCall({ agent_id: 101, parameters: phone('+911'), idempotency_key: 'dup' }))
    expect([e.status, e.type, e.message]).toEqual([409, 'duplicate_request', 'idempotency key already used'])
  })

  it('429 rate_limit_exceeded — the API quota, with X-RateLimit-* and Retry-After', async () => {
    c = await startContract({ rateLimit: 2 })
    const client = c.client('sk_test_acme', { retry: { retries: 0 } })
    await client.listConversations()
    await client.listConversations()
    const e = await failure(client.listConversations())
    expect([e.status, e.type, e.message]).toEqual([429, 'rate_limit_exceeded', 'rate limit exceeded'])
    expect(e.rateLimit).toEqual({ limit: 2, remaining: 0, reset: '2026-03-18T20:54:00+00:00', resetAt: Date.parse('2026-03-18T20:54:00Z'), retryAfter: 30 })
  })

  it('429 rate_limit_exceeded — the per-number limit', async () => {
    c = await startContract({ numberLimit: 1 })
    const client = c.client()
    await client.createCall({ agent_id: 101, parameters: phone('+919876543210') })
    const e = await failure(client.createCall({ agent_id: 101, parameters: phone('+919876543210') }))
    expect([e.status, e.type, e.message, e.retryAfterSeconds]).toEqual([429, 'rate_limit_exceeded', 'rate limit exceeded for this number', 600])
  })

  it('429 concurrent_call_limit_exceeded — current_calls / max_calls inside error', async () => {
    c = await startContract({ maxCalls: 2 })
    const client = c.client('sk_test_acme', { retry: { retries: 0 } })
    await client.createCall({ agent_id: 101, parameters: phone('+911') })
    await client.createCall({ agent_id: 101, parameters: phone('+912') })
    const e = await failure(client.createCall({ agent_id: 101, parameters: phone('+913') }))
    expect([e.status, e.type, e.message, e.currentCalls, e.maxCalls]).toEqual([
      429, 'concurrent_call_limit_exceeded', 'concurrent call limit reached. 2 simultaneous calls allowed.', 2, 2,
    ])
    expect(e.retryAfterSeconds).toBeGreaterThanOrEqual(1)
  })

  it('500 internal_error', async () => {
    c = await startContract()
    c.sandbox.failNextRequests(1)
    const e = await failure(c.client('sk_test_acme', { retry: { retries: 0 } }).listConversations())
    expect([e.status, e.type]).toEqual([500, 'internal_error'])
  })

  it('500 after the call was placed (upstream_500_after): the client retries with the same key, meets the call, and says it was placed', async () => {
    c = await startContract()
    c.sandbox.setFaults({ upstream500After: 1 })
    const e = await failure(c.drive(c.client().createCall({ agent_id: 101, parameters: phone('+919876543210') })))
    expect(e).toMatchObject({ status: 409, type: 'duplicate_request', placedEarlier: true })
    expect((e.cause as VoiceApiError).type).toBe('internal_error')
    expect(c.sandbox.stats().callsAccepted).toBe(1)
  })
})

describe('contract: the spec’s Limits table', () => {
  it('page size: default 20, maximum 100, 101 refused', async () => {
    c = await startContract()
    c.sandbox.seedConversations({ apiKey: 'sk_test_acme', agentId: 101, count: 120 })
    const client = c.client()
    expect((await client.listConversations()).data).toHaveLength(20)
    expect((await client.listConversations({ limit: 100 })).data).toHaveLength(100)
    expect((await client.listBatches({ limit: 100 })).data).toHaveLength(0)
    for (const p of [client.listConversations({ limit: 101 }), client.listBatches({ limit: 101 }), client.listConversations({ limit: 0 })]) {
      const e = await failure(p)
      expect([e.status, e.type, e.message]).toEqual([400, 'invalid_request', 'limit must be an integer from 1 to 100'])
    }
  })

  it('idempotency window: 24 hours', async () => {
    c = await startContract()
    const client = c.client()
    const req = { agent_id: 101, parameters: phone('+911'), idempotency_key: 'day' }
    await client.createCall(req)
    await c.clock.advance(24 * 3600_000 - 1000)
    expect((await failure(client.createCall(req))).status).toBe(409)
    await c.clock.advance(1000)
    expect((await client.createCall(req)).status).toBe('initiated')
  })

  it('scheduling horizon: within the next 30 days', async () => {
    c = await startContract()
    const client = c.client()
    const in30 = new Date(c.clock.now() + 30 * 86_400_000).toISOString()
    expect(await client.createCall({ agent_id: 101, parameters: phone('+911'), scheduled_for: in30 })).toMatchObject({ status: 'scheduled', scheduled_for: in30 })
    const e = await failure(client.createCall({ agent_id: 101, parameters: phone('+911'), scheduled_for: new Date(c.clock.now() + 31 * 86_400_000).toISOString() }))
    expect([e.status, e.type, e.message]).toEqual([400, 'invalid_request', 'scheduled_for must be within the next 30 days'])
  })

  it('concurrent calls and per-number frequency (see the Errors rows above), per workspace and per number', async () => {
    c = await startContract({ maxCalls: 1, numberLimit: 1 })
    const acme = c.client('sk_test_acme', { retry: { retries: 0 } })
    const globex = c.client('sk_test_globex', { retry: { retries: 0 } })
    await acme.createCall({ agent_id: 101, parameters: phone('+919876543210') })
    expect((await failure(acme.createCall({ agent_id: 101, parameters: phone('+919876543211') }))).type).toBe('concurrent_call_limit_exceeded')
    // Another workspace has its own slots and its own numbers.
    expect((await globex.createCall({ agent_id: 201, parameters: phone('+919876543210') })).status).toBe('initiated')
    await c.clock.advance(5 * 60_000)
    expect((await failure(acme.createCall({ agent_id: 101, parameters: phone('+919876543210') }))).message).toBe('rate limit exceeded for this number')
    await c.clock.advance(5 * 60_000)
    expect((await acme.createCall({ agent_id: 101, parameters: phone('+919876543210') })).status).toBe('initiated')
  })
})

describe('contract: the client’s retry rules against the sandbox', () => {
  it('429: waits for Retry-After on the injected clock, then succeeds', async () => {
    c = await startContract({ rateLimit: 2 })
    const client = c.client()
    await client.listConversations()
    await client.listConversations()
    const before = requests()
    const startedAt = c.clock.now()
    const list = await c.drive(client.listConversations(), 1000)
    expect(list.total).toBe(0)
    expect(c.clock.now() - startedAt).toBeGreaterThanOrEqual(30_000) // Retry-After: 30 (to 20:54:00)
    expect(requests() - before).toBe(2)
  })

  it('500: retried with the same idempotency key, so exactly one call is created', async () => {
    c = await startContract()
    const client = c.client()
    c.sandbox.failNextRequests(2)
    const call = await c.drive(client.createCall({ agent_id: 101, parameters: phone('+919876543210'), idempotency_key: 'k-500' }), 100)
    expect(call.status).toBe('initiated')
    expect(c.sandbox.stats()).toMatchObject({ callsAccepted: 1, callsStarted: 1 })
    expect((await failure(client.createCall({ agent_id: 101, parameters: phone('+919876543210'), idempotency_key: 'k-500' }))).status).toBe(409)
    // Without a key the client adds one, so the retry is still safe.
    c.sandbox.failNextRequests(1)
    await c.drive(client.createCall({ agent_id: 101, parameters: phone('+919876543212') }), 100)
    expect(c.sandbox.stats()).toMatchObject({ callsAccepted: 2, callsStarted: 2 })
  })

  it('400, 401 and 404 are never retried (one request each)', async () => {
    c = await startContract()
    const attempts: Array<() => Promise<unknown>> = [
      () => c.client().createCall({ agent_id: 101, parameters: [] }),
      () => c.client('sk_test_disabled').getConversation('x_1'),
      () => c.client().getConversation('nope_1'),
    ]
    for (const attempt of attempts) {
      const before = requests()
      const e = await failure(c.drive(attempt(), 1000))
      expect([400, 401, 404]).toContain(e.status)
      expect(requests() - before).toBe(1)
    }
  })
})
