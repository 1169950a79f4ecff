import { expect, it, vi } from 'vitest'
import { claimDeliveries } from '../../src/destinations/outbox.ts'
import { CLAIM_MS, claimDue, drainDue } from '../../src/webhooks/processing.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { closedAfterEach, createForwardHarness, destination, makeEvent, type ForwardHarness } from './helpers.ts'

vi.setConfig({ testTimeout: 60_000 })

/**
 * Several workers (replicas on Postgres) process a conversation's events at once: a later event whose batch finished
 * first had its delivery written — and sent — before that of an event received and acknowledged before it (QA: all
 * twelve conversations out of order with two replicas, one by 1.5 s). An ordered destination holds a delivery while an
 * event of its conversation received before it is still waiting to be processed.
 */
describeEachDialect('destinations: order across processing workers', (dialect) => {
  let h: ForwardHarness | undefined
  const sink = closedAfterEach(() => {
    const current = h
    h = undefined
    return current
  })

  it('a later event processed first on another worker waits for the earlier one, which goes first', async () => {
    const s = await sink()
    h = await createForwardHarness(dialect, [destination(s, { ordered: true }), destination(s, { name: 'unordered' })])
    await h.worker.stop()
    const call = { conversation_id: 'conv-order_1', trace_id: '0000000a-0000-4000-8000-000000000000' }
    const first = makeEvent({ event_id: 'evt_order_first', event_type: 'call.ringing' as never, call: { ...call, status: 'ringing' } })
    const second = makeEvent({ event_id: 'evt_order_second', event_type: 'call.completed', call })
    for (const event of [first, second]) {
      await h.clock.advance(1)
      expect((await h.send(event)).status).toBe(204)
    }
    // Worker A takes the first event and is still processing it; worker B takes and finishes the second.
    expect((await claimDue(h.rt, 'worker-a', 1)).map((e) => e.event_id)).toEqual(['evt_order_first'])
    expect((await drainDue(h.rt, { owner: 'worker-b' })).map((o) => o.eventId)).toEqual(['evt_order_second'])

    const crm = h.rt.config.destinations.list.find((d) => d.name === 'crm')!
    const unordered = h.rt.config.destinations.list.find((d) => d.name === 'unordered')!
    expect(await claimDeliveries(h.rt, crm, 'sender', 10, 30_000)).toEqual([])
    // A destination that does not keep order is not held.
    expect((await claimDeliveries(h.rt, unordered, 'sender', 10, 30_000)).map((d) => d.event_id)).toEqual(['evt_order_second'])

    // Worker A's claim lapses (or it finishes): the first event is processed, and its delivery goes first.
    await h.clock.advance(CLAIM_MS + 1)
    expect((await drainDue(h.rt, { owner: 'worker-a' })).map((o) => o.eventId)).toEqual(['evt_order_first'])
    expect((await claimDeliveries(h.rt, crm, 'sender', 10, 30_000)).map((d) => d.event_id)).toEqual(['evt_order_first'])
  })

  it('an earlier event whose processing failed (waiting for its retry) holds nothing', async () => {
    const s = await sink()
    h = await createForwardHarness(dialect, [destination(s, { ordered: true })])
    await h.worker.stop()
    const call = { conversation_id: 'conv-order_2', trace_id: '0000000b-0000-4000-8000-000000000000' }
    const first = makeEvent({ event_id: 'evt_failed_first', call })
    const second = makeEvent({ event_id: 'evt_failed_second', event_type: 'call.completed', call })
    for (const event of [first, second]) {
      await h.clock.advance(1)
      expect((await h.send(event)).status).toBe(204)
    }
    await h.rt.store.db.updateTable('webhook_events').set({ status: 'failed', attempts: 1, next_attempt_at: h.clock.now() + 60_000 }).where('event_id', '=', 'evt_failed_first').execute()
    await drainDue(h.rt, { owner: 'worker-b' })
    const crm = h.rt.config.destinations.list[0]!
    expect((await claimDeliveries(h.rt, crm, 'sender', 10, 30_000)).map((d) => d.event_id)).toEqual(['evt_failed_second'])
  })
})
