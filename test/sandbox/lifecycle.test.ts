import { afterEach, describe, expect, it } from 'vitest'
import { harness, phoneCall, startReceiver, type Harness } from './helpers.ts'
import { ALL_EVENTS } from '../../src/sandbox/index.ts'
import { webhookEventSchema } from '../../src/upstream/schemas.ts'

let h: Harness
afterEach(async () => h && (await h.sb.close()))

const latest = async (h: Harness) => (await h.json(await h.request('/v1/conversations?limit=1'))).data[0]

describe('call lifecycle and outcomes', () => {
  it('moves initiated → ringing → in_progress → completed on timers divided by speed', async () => {
    h = harness({ speed: 60 })
    await h.call(phoneCall('+919876543210'))
    const seen = [(await latest(h)).status]
    for (let i = 0; i < 200; i++) {
      await h.clock.advance(50)
      const s = (await latest(h)).status
      if (s !== seen.at(-1)) seen.push(s)
    }
    expect(seen).toEqual(['initiated', 'ringing', 'in_progress', 'completed'])
    const done = await latest(h)
    // 20..119 simulated seconds of talk, ended within (5 + talk) / 60 real seconds
    expect(done.duration_seconds).toBeGreaterThanOrEqual(20)
    expect(done.end_timestamp - done.start_timestamp).toBe(Math.round(((5 + done.duration_seconds) * 1000) / 60))
    expect(Number.isInteger(done.end_timestamp)).toBe(true)
  })

  it.each([
    ['+919876543210', 'completed'],
    ['+919876543211', 'completed'],
    ['+919876543214', 'completed'],
    ['+919876543215', 'no_answer'],
    ['+919876543216', 'busy'],
    ['+919876543217', 'failed'],
    ['+919876543218', 'unreachable'],
    ['+919876543219', 'socket_failure'],
    ['+919876543299', 'telephony_failed'],
    ['+91 (98765) 432-10', 'completed'],
    // Not a phone number: it cannot be dialled, never a completed call with a transcript.
    ['abc', 'unreachable'],
    ['not a number 5', 'unreachable'],
    ['+1', 'unreachable'],
    ['12', 'unreachable'],
  ])('%s ends %s', async (phone, status) => {
    h = harness()
    await h.call(phoneCall(phone))
    await h.clock.advance(10 * 60_000)
    const item = await latest(h)
    expect(item.status).toBe(status)
    const detail = (await h.json(await h.request(`/v1/conversations/${item.conversation_id}`))).data
    if (status === 'completed') {
      expect(detail.failure_reason).toBeNull()
      expect(detail.transcript.map((t: { role: string }) => t.role)).toEqual(['agent', 'human', 'agent', 'human', 'agent'])
      expect(detail.results.intent).toEqual(expect.any(String))
      expect(detail.recording_url).toMatch(/\/v1\/conversations\/.+\/recording$/)
    } else {
      expect(detail.failure_reason).toEqual(expect.any(String))
      expect(detail.transcript).toBeUndefined()
      expect(detail.recording_url).toBeUndefined()
      expect(detail.results).toEqual({})
    }
  })

  it('continues a chain with conversation_id (X_1 → X_2) and a number ending in 5 answers the follow-up', async () => {
    h = harness()
    await h.call(phoneCall('+919876543215'))
    await h.clock.advance(60_000)
    const first = await latest(h)
    expect(first.status).toBe('no_answer')
    expect(first.conversation_id).toMatch(/^[0-9a-f-]{36}_1$/)
    await h.call(phoneCall('+919876543215', { conversation_id: first.conversation_id }))
    await h.clock.advance(60_000)
    const second = await latest(h)
    expect(second.conversation_id).toBe(first.conversation_id.replace(/_1$/, '_2'))
    expect(second.status).toBe('completed')
    // retry_context alone also makes a follow-up
    await h.call(phoneCall('+919876543225', { retry_context: { retry_initial_message: 'Hi again!' } }))
    await h.clock.advance(60_000)
    const third = await latest(h)
    expect(third.conversation_id).toMatch(/_1$/)
    const detail = (await h.json(await h.request(`/v1/conversations/${third.conversation_id}`))).data
    expect(detail.status).toBe('completed')
    expect(detail.transcript[0].message).toBe('Hi again!')
  })

  it('404s a conversation_id the tenant does not own', async () => {
    h = harness()
    const res = await h.call(phoneCall('+911', { conversation_id: 'nope_1' }))
    expect(res.status).toBe(404)
  })

  it('agent 103 retries busy calls itself: three attempts, the retry block says which is final', async () => {
    const receiver = await startReceiver()
    try {
      h = harness({
        webhookTargets: () => [{ name: 't', url: receiver.url, events: ALL_EVENTS, includeTranscript: true, includeRecordingUrl: true, active: true }],
      })
      await h.call(phoneCall('+919876543216', {}, 103))
      for (let i = 0; i < 10; i++) await h.clock.advance(60_000)
      await expect.poll(() => receiver.received.length).toBe(3)
      const events = receiver.received.map((r) => webhookEventSchema.parse(JSON.parse(r.body)))
      expect(events.map((e) => e.data.retry)).toEqual([
        { attempt_number: 1, is_final_attempt: false, max_attempts: 3, next_retry_at: expect.any(String) },
        { attempt_number: 2, is_final_attempt: false, max_attempts: 3, next_retry_at: expect.any(String) },
        { attempt_number: 3, is_final_attempt: true, max_attempts: 3, next_retry_at: null },
      ])
      expect(new Set(events.map((e) => e.data.call.trace_id)).size).toBe(1)
      const chain = events[0]!.data.call.conversation_id.replace(/_1$/, '')
      expect(events.map((e) => e.data.call.conversation_id)).toEqual([`${chain}_1`, `${chain}_2`, `${chain}_3`])
      // A no-answer number is reached on the platform's second attempt.
      await h.call(phoneCall('+919876543205', {}, 103))
      for (let i = 0; i < 10; i++) await h.clock.advance(60_000)
      await expect.poll(() => receiver.received.length).toBe(5)
      const [a, b] = receiver.received.slice(3).map((r) => webhookEventSchema.parse(JSON.parse(r.body)))
      expect([a!.event_type, a!.data.retry?.is_final_attempt, b!.event_type, b!.data.retry?.is_final_attempt]).toEqual([
        'call.no_answer', false, 'call.completed', true,
      ])
      // Agents without platform retries: attempt 1 of 1, final.
      await h.call(phoneCall('+919876543206', {}, 101))
      await h.clock.advance(60_000)
      await expect.poll(() => receiver.received.length).toBe(6)
      expect(JSON.parse(receiver.received[5]!.body).data.retry).toEqual({ attempt_number: 1, is_final_attempt: true, max_attempts: 1, next_retry_at: null })
    } finally {
      await receiver.close()
    }
  })
})
