import { AggregatorRegistry, Registry } from 'prom-client'
import { afterEach, expect, it } from 'vitest'
import { registerBacklogMetrics } from '../../src/backlog-metrics.ts'
import type { Runtime } from '../../src/runtime.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createHarness, makeEvent, type Harness } from '../webhooks/helpers.ts'

/**
 * Under `serve` the processing thread counts the backlog and /metrics sums its registry with the main
 * thread's (src/processing-host.ts): the main thread's backlog gauges must then stay empty, or every figure
 * would be reported twice.
 */
describeEachDialect('backlog gauges across the two threads of `serve`', (dialect) => {
  let h: Harness
  afterEach(async () => h?.close())

  it('the processing thread\'s count is reported once; the main thread reports its own only while no thread does', async () => {
    h = await createHarness(dialect)
    for (let i = 0; i < 3; i++) expect((await h.send(makeEvent())).status).toBe(204)
    await h.clock.advance(12_000)
    let threadRunning = true
    const main: Runtime = { ...h.rt, metrics: new Registry() }
    const thread: Runtime = { ...h.rt, metrics: new Registry() }
    registerBacklogMetrics(main, { role: () => 'all', reportedElsewhere: () => threadRunning, countUpTo: 10_000 })
    registerBacklogMetrics(thread, { role: () => 'all' })
    const scrape = async () =>
      AggregatorRegistry.aggregate([await main.metrics.getMetricsAsJSON(), await thread.metrics.getMetricsAsJSON()] as Parameters<typeof AggregatorRegistry.aggregate>[0]).metrics()
    const both = await scrape()
    expect(both).toContain('switchboard_events_pending{role="all"} 3\n')
    expect(both).toContain('switchboard_events_oldest_pending_age_seconds{role="all"} 12\n')
    // The thread died: the main thread counts (up to its cap) until the next one is running.
    threadRunning = false
    expect(await main.metrics.metrics()).toContain('switchboard_events_pending{role="all"} 3\n')
  })

  it('recipe queues are counted where processing runs, and left out on a receiver\'s loop', async () => {
    h = await createHarness(dialect)
    const now = h.clock.now()
    await h.rt.store.db
      .insertInto('recipe_event_fires')
      .values(['evt_q1', 'evt_q2'].map((id) => ({ recipe: 'missed-calls', event_id: id, fired_at: now, status: 'pending', attempts: 0, next_attempt_at: now })))
      .execute()
    const processing: Runtime = { ...h.rt, metrics: new Registry() }
    const receiver: Runtime = { ...h.rt, metrics: new Registry() }
    registerBacklogMetrics(processing, { role: () => 'worker' })
    registerBacklogMetrics(receiver, { role: () => 'receiver', countUpTo: 10_000, recipeQueues: () => false })
    expect(await processing.metrics.metrics()).toContain('switchboard_recipe_events_queued{recipe="missed-calls"} 2\n')
    const onReceiver = await receiver.metrics.metrics()
    expect(onReceiver).toContain('switchboard_events_pending{role="receiver"} 0\n')
    expect(onReceiver).not.toContain('switchboard_recipe_events_queued{')
  })
})
