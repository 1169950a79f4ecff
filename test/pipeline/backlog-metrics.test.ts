import { AggregatorRegistry, Registry } from 'prom-client'
import { afterEach, expect, it } from 'vitest'
import { registerBacklogMetrics } from '../../src/backlog-metrics.ts'
import { pendingFires } from '../../src/recipes/claims.ts'
import type { Runtime } from '../../src/runtime.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { capturePrepared, queryPlan } from '../helpers/query-plans.ts'
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
      .values(['evt_q1', 'evt_q2'].map((id, i) => ({ recipe: 'missed-calls', event_id: id, fired_at: now - i * 90_000, status: 'pending', attempts: 0, next_attempt_at: now })))
      .execute()
    const processing: Runtime = { ...h.rt, metrics: new Registry() }
    const receiver: Runtime = { ...h.rt, metrics: new Registry() }
    registerBacklogMetrics(processing, { role: () => 'worker' })
    registerBacklogMetrics(receiver, { role: () => 'receiver', countUpTo: 10_000, processingQueues: () => false })
    expect(await processing.metrics.metrics()).toContain('switchboard_recipe_events_queued{recipe="missed-calls"} 2\n')
    // How long its oldest has waited: a queue that stands still shows here (/readyz watches the inbox).
    expect(await processing.metrics.metrics()).toContain('switchboard_recipe_events_oldest_age_seconds{recipe="missed-calls"} 90\n')
    const onReceiver = await receiver.metrics.metrics()
    expect(onReceiver).toContain('switchboard_events_pending{role="receiver"} 0\n')
    expect(onReceiver).not.toContain('switchboard_recipe_events_queued{')
    expect(onReceiver).not.toContain('switchboard_recipe_events_oldest_age_seconds{')
    // Nor the paced queue's depth, which only the process sending its calls knows (it read 0 there, never set).
    expect(onReceiver).not.toContain('switchboard_call_queue_depth')
    expect(await processing.metrics.metrics()).toContain('switchboard_call_queue_depth 0')
  })

  // While `serve`'s processing thread is too busy to answer, the main thread — the one answering webhooks — counts the
  // recipe queues and outboxes itself: once per queuesMaxAgeMs, not at every scrape.
  it('a loop that counts the queues for a busy thread reuses its count for queuesMaxAgeMs', async () => {
    h = await createHarness(dialect)
    const fire = (id: string) =>
      h.rt.store.db.insertInto('recipe_event_fires').values({ recipe: 'missed-calls', event_id: id, fired_at: h.clock.now(), status: 'pending', attempts: 0, next_attempt_at: h.clock.now() }).execute()
    await fire('evt_r1')
    const main: Runtime = { ...h.rt, metrics: new Registry() }
    registerBacklogMetrics(main, { role: () => 'all', countUpTo: 10_000, queuesMaxAgeMs: () => 30_000 })
    expect(await main.metrics.metrics()).toContain('switchboard_recipe_events_queued{recipe="missed-calls"} 1\n')
    await fire('evt_r2')
    await h.clock.advance(29_000)
    expect(await main.metrics.metrics()).toContain('switchboard_recipe_events_queued{recipe="missed-calls"} 1\n')
    await h.clock.advance(1_000)
    expect(await main.metrics.metrics()).toContain('switchboard_recipe_events_queued{recipe="missed-calls"} 2\n')
  })

  it('counts each recipe\'s pending and failed fires exactly, reading the pending ones only, not every fire kept', async () => {
    h = await createHarness(dialect)
    const db = h.rt.store.db
    const sqlite = h.rt.store.sqlite
    const prepared = sqlite ? capturePrepared(sqlite) : undefined
    expect(await pendingFires(h.rt)).toEqual([])
    prepared?.stop()
    // The queue keeps finished fires as long as their events: many done, a few waiting, in several recipes.
    const rows: Array<{ recipe: string; event_id: string; fired_at: number; status: string; attempts: number; next_attempt_at: number }> = []
    const statusOf = (i: number) => (i % 50 === 7 ? 'pending' : i % 50 === 9 ? 'failed' : i % 50 === 11 ? 'dead' : 'done')
    for (const [r, recipe] of ['a-recipe', 'b-recipe', 'c-recipe', 'only-done'].entries()) {
      for (let i = 0; i < 400; i++) rows.push({ recipe, event_id: `evt_${i}`, fired_at: 1_000 * (r + 1) + i, status: recipe === 'only-done' ? 'done' : statusOf(i), attempts: 0, next_attempt_at: 0 })
    }
    for (let i = 0; i < rows.length; i += 200) await db.insertInto('recipe_event_fires').values(rows.slice(i, i + 200)).execute()
    const expected = ['a-recipe', 'b-recipe', 'c-recipe'].map((recipe) => {
      const waiting = rows.filter((x) => x.recipe === recipe && (x.status === 'pending' || x.status === 'failed'))
      return { recipe, n: waiting.length, oldest: Math.min(...waiting.map((x) => x.fired_at)) }
    })
    expect(expected.map((e) => e.n)).toEqual([16, 16, 16])
    expect(await pendingFires(h.rt)).toEqual(expected)
    if (sqlite) {
      // The plan seeks: no full scan of the queue (it took 130 ms for 500,000 fires, on every scrape).
      const query = prepared!.texts.find((t) => t.includes('recipe_event_fires'))!
      const plan = queryPlan(sqlite, query)
      expect(plan.some((d) => /^SEARCH f USING INDEX recipe_event_fires_due/.test(d))).toBe(true)
      expect(plan.filter((d) => /^SCAN (recipe_event_fires|f)\b/.test(d))).toEqual([])
    }
  })
})
