import { afterEach, expect, it } from 'vitest'
import { generateWav } from '../../src/sandbox/wav.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { ACME, GLOBEX, MADE_UP, phoneCall, proxyHarness, withClock, type ProxyHarness } from './helpers.ts'

const err = (type: string, message: string | ReturnType<typeof expect.any> = expect.any(String)) => ({ error: { message, type } })

function batchForm(agentId: number | string, name: string, csv: string | null): FormData {
  const form = new FormData()
  form.set('agent_id', String(agentId))
  form.set('name', name)
  if (csv !== null) form.set('file', new Blob([csv], { type: 'text/csv' }), 'contacts.csv')
  return form
}

describeEachDialect('proxy endpoints', (dialect) => {
  let h: ProxyHarness | undefined
  afterEach(async () => {
    await h?.close()
    h = undefined
  })

  it('POST /v1/call: 200 initiated and scheduled, with the rate-limit headers passed through', async () => {
    h = await proxyHarness({ dialect })
    const now = h.sandboxClock.now()
    const res = await h.call(phoneCall('+919876543210', { metadata: { campaign: 'spring' } }))
    expect(res.status).toBe(200)
    expect(res.headers.get('x-cache')).toBe('BYPASS')
    expect(res.headers.get('x-ratelimit-limit')).toBe('600')
    expect(res.headers.get('x-ratelimit-remaining')).toMatch(/^\d+$/)
    expect(res.headers.get('x-ratelimit-reset')).toMatch(/^\d{4}-\d{2}-\d{2}T.*[+-]\d{2}:\d{2}$/)
    const { data } = await res.json()
    expect(data).toEqual({ agent_id: 101, conversation_id: null, scheduled_for: null, status: 'initiated', trace_id: expect.stringMatching(/^[0-9a-f-]{36}$/) })

    const at = new Date(now + 2 * 24 * 3600_000).toISOString()
    const scheduled = await h.call(phoneCall('+919876543211', { scheduled_for: at }))
    expect(scheduled.status).toBe(200)
    expect((await scheduled.json()).data).toMatchObject({ status: 'scheduled', scheduled_for: at })

    // Both are in the ledger with what `calls list` shows.
    const rows = await h.rt.store.db.selectFrom('calls').selectAll().orderBy('customer_phone').execute()
    expect(rows.map((r) => [r.customer_phone, r.status, r.trace_id === null])).toEqual([
      ['+919876543210', 'initiated', false],
      ['+919876543211', 'scheduled', false],
    ])
    expect(rows[1]!.scheduled_for).toBe(Date.parse(at))
    expect(rows[0]!.trace_id).toBe(data.trace_id)
  })

  it('POST /v1/call: 400s are answered locally with the spec messages, never reaching upstream', async () => {
    h = await proxyHarness({ dialect })
    const before = h.sandbox.stats().requests
    const cases: Array<[unknown, string]> = [
      [{ agent_id: 101, parameters: [] }, 'customer_phone parameter is required'],
      [{ agent_id: 101 }, 'customer_phone parameter is required'],
      [{ agent_id: 101, parameters: [{ name: 'first_name', value: 'Asha' }] }, 'customer_phone parameter is required'],
      [{ agent_id: 101, parameters: 'customer_phone=+91' }, 'parameters must be an array of {name, value} objects'],
      [{ agent_id: 101, parameters: [{ name: 'customer_phone', value: 9876 }] }, 'parameters[0] must be an object with string name and value'],
      [{ parameters: [{ name: 'customer_phone', value: '+919876543210' }] }, 'agent_id is required'],
      [phoneCall('+919876543210', { scheduled_for: 'tomorrow' }), 'scheduled_for must be an ISO 8601 datetime with a time zone'],
      [phoneCall('+919876543210', { scheduled_for: '2026-03-18T20:00:00Z' }), 'scheduled_for must be in the future'],
      [phoneCall('+919876543210', { scheduled_for: '2026-05-01T10:00:00Z' }), 'scheduled_for must be within the next 30 days'],
      [phoneCall('+919876543210', { metadata: { n: 1 } }), 'metadata must be a string or an object of string values'],
      ['[1,2]', 'request body must be a JSON object'],
    ]
    for (const [body, message] of cases) {
      const res = await h.call(body)
      expect(res.status, message).toBe(400)
      expect(res.headers.get('x-cache')).toBe('BYPASS')
      expect(await res.json()).toEqual(err('invalid_request', message))
    }
    const notJson = await h.request('/v1/call', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"agent_id":' })
    expect(notJson.status).toBe(400)
    expect((await notJson.json()).error.message).toMatch(/^request body is not valid JSON/)
    const wrongType = await h.request('/v1/call', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: JSON.stringify(phoneCall('+919876543210')) })
    expect(await wrongType.json()).toEqual(err('invalid_request', 'Content-Type must be application/json'))
    expect(h.sandbox.stats().requests).toBe(before)
    expect(await h.rt.store.db.selectFrom('calls').selectAll().execute()).toEqual([])
  })

  it('POST /v1/call: upstream 401, 404, 400 and both 429s pass through with their bodies and Retry-After', async () => {
    h = await proxyHarness({ dialect, sandbox: { maxCalls: 2 } })
    expect(await (await h.call(phoneCall('+919876543210'), MADE_UP)).json()).toEqual(err('authentication_error', 'invalid or missing api key'))
    const noAgent = await h.call(phoneCall('+919876543210', {}, 201))
    expect(noAgent.status).toBe(404)
    expect(await noAgent.json()).toEqual(err('not_found', 'agent not found'))
    const noNumber = await h.call(phoneCall('+919876543210', {}, 102))
    expect(noNumber.status).toBe(400)
    expect(await noNumber.json()).toEqual(err('invalid_request', 'agent has no phone number configured'))

    // Per-number limit: 3 calls per number per 10 minutes.
    for (let i = 0; i < 3; i++) {
      const ok = await h.call(phoneCall('+919876543212', {}, 103))
      expect(ok.status).toBe(200)
      await h.sandboxClock.advance(10 * 60_000 / 4)
    }
    await h.sandboxClock.advance(60_000)
    const limited = await h.call(phoneCall('+919876543212', {}, 103))
    expect(limited.status).toBe(429)
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(await limited.json()).toEqual(err('rate_limit_exceeded', 'rate limit exceeded for this number'))

    // Concurrency: two calls are active, the third is refused with current_calls/max_calls.
    await h.sandboxClock.advance(10 * 60_000)
    expect((await h.call(phoneCall('+919876543213'))).status).toBe(200)
    expect((await h.call(phoneCall('+919876543214'))).status).toBe(200)
    const busy = await h.call(phoneCall('+919876543216'))
    expect(busy.status).toBe(429)
    expect(busy.headers.get('retry-after')).toMatch(/^\d+$/)
    expect(await busy.json()).toEqual({
      error: { message: 'concurrent call limit reached. 2 simultaneous calls allowed.', type: 'concurrent_call_limit_exceeded', current_calls: 2, max_calls: 2 },
    })
    // A refused call may be retried with the same key once the provider allows it.
    const rows = await h.rt.store.db.selectFrom('calls').select(['status']).where('customer_phone', '=', '+919876543216').execute()
    expect(rows).toEqual([{ status: 'rejected' }])
  })

  it('POST /v1/call: a persistent upstream 500 comes back as the provider said it, after retries with one key', async () => {
    h = await proxyHarness({ dialect })
    // The key accepted lately (a read), so the call is the only request the failures meet.
    expect((await h.request('/v1/conversations?limit=1')).status).toBe(200)
    h.sandbox.failNextRequests(10)
    const res = await withClock(h.clock, h.call(phoneCall('+919876543210', { idempotency_key: 'key-500' })))
    expect(res.status).toBe(500)
    expect(await res.json()).toEqual(err('internal_error'))
    expect(h.sandbox.stats().callsAccepted).toBe(0)
    expect(h.sandbox.stats().requestsByStatus[500]).toBe(4)
    const row = await h.rt.store.db.selectFrom('calls').selectAll().executeTakeFirstOrThrow()
    expect(row).toMatchObject({ status: 'failed', idempotency_key: 'key-500' })
  })

  it('GET /v1/conversations: the list envelope, filters and pagination errors exactly as upstream', async () => {
    h = await proxyHarness({ dialect })
    h.sandbox.seedConversations({ apiKey: ACME, agentId: 101, count: 7 })
    h.sandbox.seedConversations({ apiKey: GLOBEX, agentId: 201, count: 2 })
    const page = await (await h.request('/v1/conversations?limit=5&offset=0')).json()
    expect(page).toEqual({ data: expect.any(Array), has_more: true, total: 7 })
    expect(page.data).toHaveLength(5)
    expect(page.data[0]).toEqual({
      agent_id: 101, contact_number: expect.any(String), conversation_id: expect.any(String), duration_seconds: expect.any(Number),
      start_timestamp: expect.any(Number), end_timestamp: expect.any(Number), status: expect.any(String),
    })
    const rest = await (await h.request('/v1/conversations?limit=5&offset=5')).json()
    expect(rest).toMatchObject({ has_more: false, total: 7 })
    expect(rest.data).toHaveLength(2)
    expect((await (await h.request('/v1/conversations', { key: GLOBEX })).json()).total).toBe(2)

    for (const query of ['limit=101', 'limit=0', 'offset=-1', 'agent_id=abc']) {
      const bad = await h.request(`/v1/conversations?${query}`)
      const direct = await h.direct(`/v1/conversations?${query}`)
      expect(bad.status, query).toBe(400)
      expect(await bad.json()).toEqual(await direct.json())
      expect((await h.request(`/v1/conversations?${query}`)).headers.get('x-cache')).toBe('MISS')
    }
    expect((await h.request('/v1/batch-calls?limit=101')).status).toBe(400)
  })

  it('GET /v1/conversations/:id: detail with transcript and results; 404 for unknown ids', async () => {
    h = await proxyHarness({ dialect })
    h.sandbox.seedConversations({ apiKey: ACME, agentId: 101, count: 1 })
    const [item] = (await (await h.request('/v1/conversations')).json()).data
    const detail = await h.request(`/v1/conversations/${encodeURIComponent(item.conversation_id)}`)
    expect(detail.status).toBe(200)
    expect(await detail.json()).toEqual(await (await h.direct(`/v1/conversations/${item.conversation_id}`)).json())
    for (const id of ['no-such-conversation', 'a%2Fb', '..%2F..%2Fetc']) {
      const missing = await h.request(`/v1/conversations/${id}`)
      expect(missing.status, id).toBe(404)
      expect(await missing.json()).toEqual(err('not_found'))
    }
  })

  it('batches: POST /v1/batch-call (multipart, streamed), list, one batch, metrics, and their errors', async () => {
    h = await proxyHarness({ dialect })
    const csv = 'customer_phone,first_name\n+919876543210,Asha\n+919876543211,Ravi\n+919876543215,Meena\n'
    const created = await h.request('/v1/batch-call', { method: 'POST', body: batchForm(101, 'spring', csv) })
    expect(created.status).toBe(200)
    expect(created.headers.get('x-cache')).toBe('BYPASS')
    const batch = (await created.json()).data
    expect(batch).toMatchObject({ id: expect.any(Number), name: 'spring', agent_id: 101, total_recipients: 3 })

    const list = await h.request('/v1/batch-calls?agent_id=101')
    expect(list.headers.get('x-cache')).toBe('MISS')
    expect((await list.json()).data.map((b: { id: number }) => b.id)).toEqual([batch.id])
    const one = await h.request(`/v1/batch-calls/${batch.id}`)
    expect((await one.json()).data).toMatchObject({ id: batch.id, name: 'spring' })
    expect((await h.request(`/v1/batch-calls/${batch.id}`)).headers.get('x-cache')).toBe('HIT')

    await h.sandboxClock.advance(30 * 60_000)
    await h.clock.advance(10_001)
    const metrics = await h.request(`/v1/batch-calls/${batch.id}/metrics`)
    expect(metrics.status).toBe(200)
    expect((await metrics.json()).data).toMatchObject({ total_processed: 3, completed_count: 2, no_answer_count: 1 })

    // A new batch invalidates that tenant's batch lists at once — and a 404 cached for its id (the next one) just before.
    const nextId = batch.id + 1
    expect((await h.request(`/v1/batch-calls/${nextId}`)).status).toBe(404)
    expect((await h.request(`/v1/batch-calls/${nextId}`)).headers.get('x-cache')).toBe('HIT')
    const second = (await (await h.request('/v1/batch-call', { method: 'POST', body: batchForm(101, 'summer', csv) })).json()).data as { id: number }
    expect(second.id).toBe(nextId)
    const read = await h.request(`/v1/batch-calls/${nextId}`)
    expect([read.status, read.headers.get('x-cache')]).toEqual([200, 'MISS'])
    await read.arrayBuffer()
    const after = await h.request('/v1/batch-calls?agent_id=101')
    expect(after.headers.get('x-cache')).toBe('MISS')
    expect((await after.json()).data).toHaveLength(2)

    expect(await (await h.request(`/v1/batch-calls/${batch.id}`, { key: GLOBEX })).json()).toEqual(err('not_found', 'batch not found'))
    expect((await h.request(`/v1/batch-calls/${batch.id}/metrics`, { key: GLOBEX })).status).toBe(404)
    expect((await h.request('/v1/batch-calls/999999')).status).toBe(404)
    const noFile = await h.request('/v1/batch-call', { method: 'POST', body: batchForm(101, 'x', null) })
    expect(await noFile.json()).toEqual(err('invalid_request', 'file is required (a CSV with a customer_phone column)'))
    const noColumn = await h.request('/v1/batch-call', { method: 'POST', body: batchForm(101, 'x', 'phone\n+919876543210\n') })
    expect(await noColumn.json()).toEqual(err('invalid_request', 'file must contain a customer_phone column'))
    expect((await h.request('/v1/batch-call', { method: 'POST', body: batchForm(999, 'x', csv) })).status).toBe(404)
    expect((await h.request('/v1/batch-call', { method: 'POST', body: batchForm(101, 'x', csv), key: MADE_UP })).status).toBe(401)
  })

  it('transcription: submit (streamed), pending never cached, completed cached for good, 404 for unknown jobs', async () => {
    h = await proxyHarness({ dialect })
    const form = new FormData()
    form.set('audio', new Blob([generateWav('transcribe-me', 4)], { type: 'audio/wav' }), 'call.wav')
    form.set('languages', 'hi-IN,en-IN')
    form.set('diarize', 'true')
    const submitted = await h.request('/v1/transcription/jobs', { method: 'POST', body: form })
    expect(submitted.status).toBe(200)
    const job = await submitted.json()
    expect(job).toEqual({ id: expect.stringMatching(/^job_/), engine: expect.any(String), status: 'pending' })

    for (let i = 0; i < 2; i++) {
      const pending = await h.request(`/v1/transcription/jobs/${job.id}`)
      expect(pending.headers.get('x-cache')).toBe('MISS')
      expect((await pending.json()).status).toBe('pending')
    }
    await h.sandboxClock.advance(10 * 60_000)
    const done = await h.request(`/v1/transcription/jobs/${job.id}`)
    const body = await done.json()
    expect(body).toMatchObject({ id: job.id, status: 'completed', text: expect.any(String), language: expect.any(String), utterances: expect.any(Array) })
    await h.clock.advance(30 * 24 * 3600_000)
    const cached = await h.request(`/v1/transcription/jobs/${job.id}`)
    expect(cached.headers.get('x-cache')).toBe('MISS') // key window passed: re-confirmed upstream
    expect((await h.request(`/v1/transcription/jobs/${job.id}`)).headers.get('x-cache')).toBe('HIT')

    expect(await (await h.request('/v1/transcription/jobs/job_nope')).json()).toEqual(err('not_found', 'transcription job not found'))
    expect((await h.request(`/v1/transcription/jobs/${job.id}`, { key: GLOBEX })).status).toBe(404)
    const noAudio = new FormData()
    noAudio.set('languages', 'hi-IN')
    expect(await (await h.request('/v1/transcription/jobs', { method: 'POST', body: noAudio })).json()).toEqual(err('invalid_request', 'audio file is required'))
  })

  it('unknown paths and methods under /v1 pass through (BYPASS) with the provider answer', async () => {
    h = await proxyHarness({ dialect })
    const unknown = await h.request('/v1/agents')
    expect(unknown.status).toBe(404)
    expect(unknown.headers.get('x-cache')).toBe('BYPASS')
    expect((await unknown.json()).error.type).toBe('not_found')
    const wrongMethod = await h.request('/v1/conversations', { method: 'DELETE' })
    expect(wrongMethod.status).toBe(405)
    expect((await wrongMethod.json()).error.type).toBe('invalid_request')
  })
})
