import { createHmac } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { ALL_EVENTS, type SandboxWebhookTarget } from '../../src/sandbox/index.ts'
import { webhookEventSchema } from '../../src/upstream/schemas.ts'
import { harness, phoneCall, startReceiver, type Harness } from './helpers.ts'

let h: Harness
let receivers: Array<Awaited<ReturnType<typeof startReceiver>>> = []
afterEach(async () => {
  await h?.sb.close()
  for (const r of receivers) await r.close()
  receivers = []
})

const NO_FAULTS = { webhookDuplicate: 0, webhookDrop: 0, webhookReorder: 0, upstream500: 0, upstream500After: 0, latencyMs: 0 }
const target = (url: string, extra: Partial<SandboxWebhookTarget> = {}): SandboxWebhookTarget => ({
  name: 't', url, secret: 'whsec_unit', events: ALL_EVENTS, includeTranscript: true, includeRecordingUrl: true, active: true, ...extra,
})
async function receiver(answer?: Parameters<typeof startReceiver>[0]) {
  const r = await startReceiver(answer)
  receivers.push(r)
  return r
}

describe('webhook delivery', () => {
  it('retries 5xx at 0 / 30 / 300 s (÷ speed) with the same event id, then gives up', async () => {
    const r = await receiver(() => 503)
    h = harness({ speed: 60, webhookTargets: () => [target(r.url)] })
    await h.call(phoneCall('+919876543216'))
    await h.clock.advance(3000 / 60)
    await expect.poll(() => h.sb.deliveries().length).toBe(1)
    const endedAt = h.clock.now()
    await h.clock.advance(30_000 / 60 - 1)
    expect(r.received).toHaveLength(1)
    await h.clock.advance(1)
    await expect.poll(() => h.sb.deliveries().length).toBe(2)
    await h.clock.advanceTo(endedAt + 300_000 / 60 - 1)
    expect(r.received).toHaveLength(2)
    await h.clock.advance(1)
    await expect.poll(() => h.sb.deliveries().length).toBe(3)
    await h.clock.advance(3600_000)
    expect(r.received).toHaveLength(3)
    expect(new Set(r.received.map((x) => x.headers['x-formantai-event-id'])).size).toBe(1)
    expect(h.sb.deliveries().map((d) => [d.attempt, d.outcome, d.at - endedAt])).toEqual([[1, 503, 0], [2, 503, 500], [3, 503, 5000]])
  })

  it('retries 429 and stops at the first 2xx; never retries other 4xx', async () => {
    const r1 = await receiver((_r, n) => (n === 1 ? 429 : 200))
    const r2 = await receiver(() => 410)
    h = harness({ webhookTargets: () => [target(r1.url, { name: 'a' }), target(r2.url, { name: 'b' })] })
    await h.call(phoneCall('+919876543217'))
    await h.clock.advance(1000 / 60 + 1)
    await expect.poll(() => h.sb.deliveries().length).toBe(2)
    await h.clock.advance(600_000)
    await expect.poll(() => h.sb.deliveries().length).toBe(3)
    await h.clock.advance(600_000)
    expect(h.sb.deliveries().map((d) => [d.target, d.attempt, d.outcome]).sort()).toEqual([['a', 1, 429], ['a', 2, 200], ['b', 1, 410]])
  })

  it('times out after 10 s on the clock and retries; network errors are retried too', async () => {
    const hang = await receiver(() => 0)
    h = harness({ webhookTargets: () => [target(hang.url, { name: 'slow' }), target('http://127.0.0.1:9/refused', { name: 'down' })] })
    await h.call(phoneCall('+919876543218'))
    await h.clock.advance(2000 / 60)
    await expect.poll(() => hang.received.length).toBe(1)
    await expect.poll(() => h.sb.deliveries().filter((d) => d.target === 'down').length).toBe(1)
    expect(h.sb.deliveries().find((d) => d.target === 'down')!.outcome).toBe('network_error')
    await h.clock.advance(9_999)
    expect(h.sb.deliveries().filter((d) => d.target === 'slow')).toHaveLength(0)
    await h.clock.advance(1)
    await expect.poll(() => h.sb.deliveries().filter((d) => d.target === 'slow').map((d) => d.outcome)).toEqual(['timeout'])
  })

  it('sends only subscribed, active targets; transcript and recording URL per target; unsigned without a secret', async () => {
    const full = await receiver()
    const bare = await receiver()
    const off = await receiver()
    h = harness({
      publicBaseUrl: () => 'http://sandbox.example',
      webhookTargets: () => [
        target(full.url, { name: 'full' }),
        target(bare.url, { name: 'bare', secret: undefined, includeTranscript: false, includeRecordingUrl: false, events: ['call.completed'] }),
        target(off.url, { name: 'off', active: false }),
      ],
    })
    await h.call(phoneCall('+919876543210'))
    await h.call(phoneCall('+919876543216'))
    await h.clock.advance(300_000 / 60)
    await expect.poll(() => full.received.length).toBe(2)
    await expect.poll(() => bare.received.length).toBe(1)
    expect(off.received).toHaveLength(0)
    const completed = full.received.map((x) => webhookEventSchema.parse(JSON.parse(x.body))).find((e) => e.event_type === 'call.completed')!
    expect(completed.data.transcript).toMatch(/^BOT: .+\nHUMAN: .+/)
    expect(completed.data.call.recording_url).toBe(`http://sandbox.example/v1/conversations/${completed.data.call.conversation_id}/recording`)
    const busy = full.received.map((x) => webhookEventSchema.parse(JSON.parse(x.body))).find((e) => e.event_type === 'call.busy')!
    expect(busy.data.transcript).toBeNull()
    expect(busy.data.call.recording_url).toBeNull()
    const plain = bare.received[0]!
    expect(plain.headers['x-formantai-signature']).toBeUndefined()
    const ev = webhookEventSchema.parse(JSON.parse(plain.body))
    expect(ev.event_type).toBe('call.completed')
    expect([ev.data.transcript, ev.data.call.recording_url]).toEqual([null, null])
    const signed = full.received[0]!
    expect(signed.headers['x-formantai-signature']).toBe(`sha256=${createHmac('sha256', 'whsec_unit').update(signed.body).digest('hex')}`)
  })

  it('fault webhook_drop never delivers; webhook_duplicate delivers twice with one event id', async () => {
    const r = await receiver()
    h = harness({ faults: { ...NO_FAULTS, webhookDrop: 1 }, webhookTargets: () => [target(r.url)] })
    await h.call(phoneCall('+919876543216'))
    await h.clock.advance(600_000)
    expect(r.received).toHaveLength(0)
    expect(h.sb.deliveries().map((d) => d.outcome)).toEqual(['dropped'])
    h.sb.setFaults({ webhookDrop: 0, webhookDuplicate: 1 })
    await h.call(phoneCall('+919876543206'))
    await h.clock.advance(600_000)
    await expect.poll(() => r.received.length).toBe(2)
    expect(r.received[0]!.body).toBe(r.received[1]!.body)
    expect(h.sb.deliveries().filter((d) => d.outcome !== 'dropped').map((d) => d.duplicate)).toEqual([false, true])
  })

  it('fault webhook_reorder delivers late, so a later event overtakes it', async () => {
    const r = await receiver()
    h = harness({ faults: { ...NO_FAULTS, webhookReorder: 1 }, webhookTargets: () => [target(r.url)] })
    await h.call(phoneCall('+919876543217')) // failed at 1 s, delivered 45 s later
    await h.clock.advance(1000 / 60 + 1)
    h.sb.setFaults({ webhookReorder: 0 })
    await h.call(phoneCall('+919876543216')) // busy at 3 s, delivered at once
    await h.clock.advance(3000 / 60 + 1)
    await expect.poll(() => r.received.length).toBe(1)
    await h.clock.advance(45_000 / 60)
    await expect.poll(() => r.received.length).toBe(2)
    expect(r.received.map((x) => x.headers['x-formantai-event-type'])).toEqual(['call.busy', 'call.failed'])
  })

  it('close() cancels pending timers and deliveries', async () => {
    const r = await receiver(() => 500)
    h = harness({ webhookTargets: () => [target(r.url)] })
    await h.call(phoneCall('+919876543210'))
    await h.call(phoneCall('+919876543216', { scheduled_for: new Date(h.clock.now() + 86_400_000).toISOString() }))
    expect(h.sb.stats().timersPending).toBeGreaterThan(0)
    await h.sb.close()
    expect(h.sb.stats().timersPending).toBe(0)
    await h.clock.advance(2 * 86_400_000)
    expect(r.received).toHaveLength(0)
  })
})
