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
})
