import { expect, it, vi } from 'vitest'
import { enqueueDeliveries, type OutboxEvent } from '../../src/destinations/outbox.ts'
import { recipeDestinations } from '../../src/destinations/publish.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { closedAfterEach, createForwardHarness, destination, sentEventIds, WAIT, type ForwardHarness } from './helpers.ts'

// Real HTTP on a shared, busy machine.
vi.setConfig({ testTimeout: 60_000 })

/**
 * Events given in the same millisecond of the (manual) clock — a recipe's publishes, or events of one millisecond
 * that processing handles in two batches — reach an ordered destination in the order they were given.
 */
describeEachDialect('destinations: order within one millisecond', (dialect) => {
  let h: ForwardHarness | undefined
  const sink = closedAfterEach(() => {
    const current = h
    h = undefined
    return current
  })

  it('a recipe\'s publishes for one conversation in the same millisecond are delivered in publish order', async () => {
    const s = await sink()
    h = await createForwardHarness(dialect, [destination(s, { ordered: true, events: ['followup.*'] })])
    const publish = recipeDestinations(h.rt, { dryRun: false, plan: [] }, 'no-answer-followup').publish
    const published: string[] = []
    // The clock stands still: every publish is in the same millisecond, each its own batch.
    for (let i = 0; i < 10; i++) {
      for (const type of ['followup.scheduled', 'followup.sent']) {
        published.push((await publish(type, { attempt: i }, { conversationId: 'conv-1_1', idempotencyKey: `c1-${i}-${type}` })).eventId)
      }
    }
    h.worker.wake()
    await vi.waitFor(() => expect(s.requests).toHaveLength(published.length), WAIT)
    expect(sentEventIds(s)).toEqual(published)
  })

  it('events of one millisecond split across processing batches keep the order they were given in', async () => {
    const s = await sink()
    h = await createForwardHarness(dialect, [destination(s, { ordered: true })])
    const at = h.clock.now()
    const events: OutboxEvent[] = Array.from({ length: 6 }, (_, i) => ({
      event_id: `evt_ms_${i}`, event_type: 'call.completed', agent_id: 101, conversation_id: 'conv-9_1', received_at: at,
      body: JSON.stringify({ event_id: `evt_ms_${i}`, event_type: 'call.completed', timestamp: new Date(at).toISOString(), data: {} }),
    }))
    // Three batches of two, as processing's transactions write them.
    for (let i = 0; i < events.length; i += 2) await h.rt.store.db.transaction().execute((trx) => enqueueDeliveries(trx, h!.rt, events.slice(i, i + 2)))
    h.worker.wake()
    await vi.waitFor(() => expect(s.requests).toHaveLength(events.length), WAIT)
    expect(sentEventIds(s)).toEqual(events.map((e) => e.event_id))
  })
  it('… also when a publish stamped later came between the batches (processing lags receipt)', async () => {
    const s = await sink()
    h = await createForwardHarness(dialect, [destination(s, { ordered: true, events: ['call.completed'] })])
    await h.worker.stop()
    const at = h.clock.now()
    const event = (i: number): OutboxEvent => ({
      event_id: `evt_lag_${i}`, event_type: 'call.completed', agent_id: 101, conversation_id: 'conv-9_1', received_at: at,
      body: JSON.stringify({ event_id: `evt_lag_${i}`, event_type: 'call.completed', timestamp: new Date(at).toISOString(), data: {} }),
    })
    await h.rt.store.db.transaction().execute((trx) => enqueueDeliveries(trx, h!.rt, [event(0), event(1)]))
    // A recipe run on an earlier event publishes now (its type is not forwarded here; its stamp is what matters).
    await h.clock.advance(50)
    await recipeDestinations(h.rt, { dryRun: false, plan: [] }, 'r').publish('followup.scheduled', {}, { conversationId: 'conv-9_1' })
    await h.rt.store.db.transaction().execute((trx) => enqueueDeliveries(trx, h!.rt, [event(2)]))
    const { startDeliveryWorker } = await import('../../src/destinations/worker.ts')
    h.worker = startDeliveryWorker(h.rt)
    await vi.waitFor(() => expect(s.requests).toHaveLength(3), WAIT)
    expect(sentEventIds(s)).toEqual(['evt_lag_0', 'evt_lag_1', 'evt_lag_2'])
  })
})
