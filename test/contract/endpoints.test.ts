import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateWav } from '../../src/sandbox/wav.ts'
import { WEBHOOK_EVENT_TYPES, webhookEventSchema, type WebhookEvent } from '../../src/upstream/schemas.ts'
import { phone, startContract, type Contract } from './harness.ts'

/** Acceptance: the real client against the real sandbox over HTTP, for every endpoint and every event type. */
let c: Contract
beforeAll(async () => {
  c = await startContract()
})
afterAll(async () => c?.close())

describe('contract: every endpoint', () => {
  it('POST /v1/call answers the provider bytes and the client reads them', async () => {
    const raw = await fetch(`${c.baseUrl}/v1/call`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk_test_acme', 'content-type': 'application/json' },
      body: JSON.stringify({ agent_id: 101, parameters: phone('+919876543210') }),
    })
    expect(raw.status).toBe(200)
    expect(await raw.text()).toMatch(/^\{"data":\{"agent_id":101,"conversation_id":null,"scheduled_for":null,"status":"initiated","trace_id":"[0-9a-f-]{36}"\}\}$/)
    const client = c.client()
    const call = await client.createCall({ agent_id: 101, parameters: phone('+919876543211') })
    expect(call).toMatchObject({ agent_id: 101, conversation_id: null, scheduled_for: null, status: 'initiated' })
    expect(client.lastRateLimit).toMatchObject({ limit: 600, remaining: 598, reset: '2026-03-18T20:54:00+00:00' })
  })

  it('delivers every one of the 7 event types, signed, with the provider headers and envelope', async () => {
    const client = c.client()
    const numbers = { completed: '+919000000010', no_answer: '+919000000015', busy: '+919000000016', failed: '+919000000017', unreachable: '+919000000018', socket_failure: '+919000000019', telephony_failed: '+919000000099' }
    const traces = new Map<string, string>()
    for (const [status, number] of Object.entries(numbers)) {
      const call = await client.createCall({ agent_id: 101, parameters: [...phone(number), { name: 'customer_name', value: 'Asha' }], metadata: { campaign: 'c1' } })
      traces.set(call.trace_id, status)
    }
    const before = c.deliveries.length
    const sentAt = c.clock.now()
    await c.clock.advance(10 * 60_000)
    await expect.poll(() => c.deliveries.length - before, { timeout: 5000 }).toBeGreaterThanOrEqual(7)
    const mine = c.deliveries.slice(before).map((d) => ({ d, event: webhookEventSchema.parse(JSON.parse(d.raw.toString('utf8'))) as WebhookEvent }))
      .filter(({ event }) => traces.has(event.data.call.trace_id))
    expect(mine.map(({ event }) => event.event_type).sort()).toEqual([...WEBHOOK_EVENT_TYPES].sort())
    for (const { d, event } of mine) {
      expect(d.signatureValid).toBe(true)
      expect(d.headers['content-type']).toBe('application/json')
      expect(d.headers['x-formantai-event-id']).toBe(event.event_id)
      expect(d.headers['x-formantai-event-type']).toBe(event.event_type)
      const ts = Number(d.headers['x-formantai-timestamp'])
      expect(Number.isInteger(ts)).toBe(true)
      expect(ts * 1000).toBeGreaterThanOrEqual(Math.floor(sentAt / 1000) * 1000)
      expect(ts * 1000).toBeLessThanOrEqual(c.clock.now())
      expect(event.event_id).toMatch(/^evt_[0-9a-f]{12}$/)
      expect(Number.isFinite(Date.parse(event.timestamp))).toBe(true)
      const status = traces.get(event.data.call.trace_id)!
      expect(event.event_type).toBe(`call.${status}`)
      expect(event.data.call).toMatchObject({
        agent_id: 101, status, from_phone: '+918035550101', to_phone: numbers[status as keyof typeof numbers],
        call_parameters: { customer_phone: numbers[status as keyof typeof numbers], customer_name: 'Asha' },
        conversation_id: expect.stringMatching(/^[0-9a-f-]{36}_1$/),
      })
      expect(event.data.retry).toEqual({ attempt_number: 1, is_final_attempt: true, max_attempts: 1, next_retry_at: null })
      if (status === 'completed') {
        expect(event.data.transcript).toMatch(/^BOT: Hello Asha/)
        expect(event.data.call.recording_url).toBe(`${c.baseUrl}/v1/conversations/${event.data.call.conversation_id}/recording`)
        expect(event.data.call.duration_seconds).toBeGreaterThan(0)
        expect(event.data.results).toMatchObject({ intent: expect.any(String) })
      } else {
        expect(event.data.transcript).toBeNull()
        expect(event.data.call.recording_url).toBeNull()
        expect(event.data.call.failure_reason).toEqual(expect.any(String))
      }
      if (status === 'no_answer') expect(event.data.call.duration_seconds).toBeNull()
    }
  })

  it('GET /v1/conversations, /{id} and /{id}/recording (streamed download)', async () => {
    const client = c.client()
    const list = await client.listConversations({ agent_id: 101, limit: 5 })
    expect(list.data).toHaveLength(5)
    expect(list.total).toBeGreaterThanOrEqual(9)
    expect(list.has_more).toBe(true)
    const completed = (await client.listConversations({ limit: 100 })).data.find((i) => i.status === 'completed')!
    const detail = await client.getConversation(completed.conversation_id)
    expect(detail).toMatchObject({ conversation_id: completed.conversation_id, status: 'completed', failure_reason: null })
    expect(detail.transcript?.[0]?.role).toBe('agent')
    const recording = await client.downloadRecording(completed.conversation_id)
    expect(recording.contentType).toBe('audio/wav')
    const bytes = Buffer.from(await new Response(recording.body).arrayBuffer())
    expect(bytes.length).toBe(recording.contentLength)
    expect(bytes.toString('ascii', 0, 4)).toBe('RIFF')
    const ranged = await fetch(`${c.baseUrl}/v1/conversations/${completed.conversation_id}/recording`, { headers: { authorization: 'Bearer sk_test_acme', range: 'bytes=40-99' } })
    expect(ranged.status).toBe(206)
    expect(Buffer.from(await ranged.arrayBuffer()).equals(bytes.subarray(40, 100))).toBe(true)
  })

  it('POST /v1/batch-call, GET /v1/batch-calls, /{id} and /{id}/metrics', async () => {
    const client = c.client()
    const batch = await client.createBatch({
      agent_id: 101,
      name: 'contract batch',
      file: { data: 'customer_phone,customer_name\n+918000000000,A\n+918000000006,B\n+918000000005,C\n', filename: 'rows.csv' },
    })
    expect(batch).toMatchObject({ name: 'contract batch', agent_id: 101, status: 'pending', total_recipients: 3 })
    await c.clock.advance(10 * 60_000)
    await expect.poll(async () => (await client.getBatch(batch.id)).status).toBe('completed')
    const metrics = await client.getBatchMetrics(batch.id)
    expect(metrics).toMatchObject({ completed_count: 1, busy_count: 1, no_answer_count: 1, total_processed: 3, success_count: 1, in_progress_count: 0, pending_retry_count: 0 })
    expect(metrics.success_rate).toBeCloseTo(33.33, 2)
    const list = await client.listBatches({ agent_id: 101 })
    expect(list.data[0]!.id).toBe(batch.id)
    expect(list).toMatchObject({ has_more: false, total: 1 })
  })

  it('POST /v1/transcription/jobs and GET /v1/transcription/jobs/{id}', async () => {
    const client = c.client()
    const job = await client.createTranscriptionJob({ audio: { data: generateWav('contract', 3), filename: 'a.wav', contentType: 'audio/wav' }, languages: 'en-IN', diarize: true, format: 'standard' })
    expect(job).toEqual({ id: expect.stringMatching(/^job_/), engine: expect.any(String), status: 'pending' })
    await c.clock.advance(60_000)
    const done = await client.getTranscriptionJob(job.id)
    expect(done).toMatchObject({ id: job.id, status: 'completed', language: 'en-IN' })
    expect(done.utterances!.every((u) => u.end > u.start && u.end <= 3)).toBe(true)
  })

  it('a platform-retrying agent (103) reports further attempts in the retry block', async () => {
    const client = c.client()
    const call = await client.createCall({ agent_id: 103, parameters: phone('+919100000006') })
    const before = c.deliveries.length
    for (let i = 0; i < 10; i++) await c.clock.advance(60_000)
    const events = () =>
      c.deliveries.slice(before).map((d) => webhookEventSchema.parse(JSON.parse(d.raw.toString('utf8')))).filter((e) => e.data.call.trace_id === call.trace_id)
    await expect.poll(() => events().length, { timeout: 5000 }).toBe(3)
    expect(events().map((e) => [e.data.retry?.attempt_number, e.data.retry?.is_final_attempt, e.data.retry?.next_retry_at === null])).toEqual([
      [1, false, false], [2, false, false], [3, true, true],
    ])
  })
})
