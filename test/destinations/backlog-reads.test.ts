import { afterEach, expect, it } from 'vitest'
import { summarizeDestinations } from '../../src/destinations/deliveries.ts'
import { AggregatorRegistry, Registry } from 'prom-client'
import { registerBacklogMetrics } from '../../src/backlog-metrics.ts'
import type { Runtime } from '../../src/runtime.ts'
import { deliveryId } from '../../src/destinations/sign.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { capturePrepared, queryPlan } from '../helpers/query-plans.ts'
import { createHarness, type Harness } from '../webhooks/helpers.ts'
import { DEST_SECRET } from './helpers.ts'

/**
 * The forwarding backlog as operators read it — the queue depth and oldest undelivered age at every `/metrics`
 * scrape, the dashboard's Destinations page and `destinations list` — from the outbox's pending index alone
 * (migration 0015): a destination that is down for a day holds hundreds of thousands of pending rows, and reading
 * each for its `created_at` took the processing thread longer with every scrape.
 */
describeEachDialect('destinations: reading the backlog', (dialect) => {
  let h: Harness | undefined
  afterEach(async () => {
    await h?.close()
    h = undefined
  })

  it('queue depth, oldest undelivered and the per-status counts are exact, and read from the index alone', async () => {
    const destinations = ['crm', 'warehouse'].map((name) => ({ name, url: `http://127.0.0.1:9/${name}`, secret: DEST_SECRET, allowHttp: true }))
    h = await createHarness(dialect, { ALLOW_PRIVATE_DESTINATIONS: '1', DESTINATIONS: JSON.stringify(destinations) })
    const now = h.clock.now()
    type Status = 'pending' | 'delivered' | 'dead'
    const row = (destination: string, n: number, status: Status, createdAt: number) => ({
      id: deliveryId(destination, `evt_${n}`), destination, event_id: `evt_${n}`, event_type: 'call.completed', conversation_id: null, payload: '',
      order_at: createdAt * 1000, status, attempts: status === 'pending' ? 2 : 1, round_attempts: 0,
      // Retried ones wait longer than fresh ones: the oldest undelivered is not the first one due.
      next_attempt_at: status === 'pending' ? now + 60_000 - n : createdAt, claimed_by: null, claimed_until: null, last_status: null, last_error: null,
      created_at: createdAt, delivered_at: status === 'delivered' ? createdAt + 10 : null,
    })
    const rows = [
      // crm: delivered long ago, three pending (the oldest 90 s old), one dead.
      ...Array.from({ length: 20 }, (_, i) => row('crm', i, 'delivered', now - 3_600_000 + i)),
      row('crm', 100, 'pending', now - 90_000),
      row('crm', 101, 'pending', now - 30_000),
      row('crm', 102, 'pending', now - 5_000),
      row('crm', 103, 'dead', now - 7_200_000),
      // warehouse: everything delivered.
      ...Array.from({ length: 5 }, (_, i) => row('warehouse', 200 + i, 'delivered', now - 60_000 + i)),
    ]
    await h.rt.store.db.insertInto('destination_deliveries').values(rows).execute()

    const sqlite = h.rt.store.sqlite
    const prepared = sqlite ? capturePrepared(sqlite) : undefined
    registerBacklogMetrics(h.rt, { role: () => 'all' })
    const scrape = await h.rt.metrics.metrics()
    expect(scrape.split('\n').filter((l) => l.startsWith('switchboard_destination_queue_depth{'))).toEqual([
      'switchboard_destination_queue_depth{destination="crm"} 3',
      'switchboard_destination_queue_depth{destination="warehouse"} 0',
    ])
    expect(scrape.split('\n').filter((l) => l.startsWith('switchboard_destination_oldest_undelivered_seconds{'))).toEqual([
      'switchboard_destination_oldest_undelivered_seconds{destination="crm"} 90',
      'switchboard_destination_oldest_undelivered_seconds{destination="warehouse"} 0',
    ])
    const summary = await summarizeDestinations(h.rt)
    expect(summary.map((d) => [d.name, d.pending, d.delivered, d.dead, d.oldest_pending_at])).toEqual([
      ['crm', 3, 20, 1, new Date(now - 90_000).toISOString()],
      ['warehouse', 0, 5, 0, null],
    ])

    if (sqlite && prepared) {
      prepared.stop()
      const pendingReads = prepared.texts.filter((t) => /min\("created_at"\)/.test(t))
      expect(pendingReads).toHaveLength(2)
      for (const text of pendingReads) {
        // From the pending index alone: no read of a delivery row, however large the backlog or the outbox.
        expect(queryPlan(sqlite, text, 'crm')).toEqual([expect.stringMatching(/USING COVERING INDEX destination_deliveries_pending_due_created\b/)])
      }
    }
  })

  it('under serve the outbox is counted once (the processing thread\'s count), and not on a receiver\'s loop', async () => {
    const destinations = [{ name: 'crm', url: 'http://127.0.0.1:9/crm', secret: DEST_SECRET, allowHttp: true }]
    h = await createHarness(dialect, { ALLOW_PRIVATE_DESTINATIONS: '1', DESTINATIONS: JSON.stringify(destinations) })
    const now = h.clock.now()
    await h.rt.store.db
      .insertInto('destination_deliveries')
      .values([0, 1, 2, 3, 4].map((n) => ({
        id: deliveryId('crm', `evt_${n}`), destination: 'crm', event_id: `evt_${n}`, event_type: 'call.completed', conversation_id: null, payload: '',
        order_at: (now - 40_000) * 1000 + n, status: 'pending', attempts: 1, round_attempts: 1, next_attempt_at: now + 60_000, claimed_by: null,
        claimed_until: null, last_status: null, last_error: 'connect ECONNREFUSED', created_at: now - 40_000 + n, delivered_at: null,
      })))
      .execute()
    // /metrics under serve sums the main thread's registry with the processing thread's (src/processing-host.ts).
    let threadRunning = true
    const main: Runtime = { ...h.rt, metrics: new Registry() }
    const thread: Runtime = { ...h.rt, metrics: new Registry() }
    registerBacklogMetrics(main, { role: () => 'all', reportedElsewhere: () => threadRunning, countUpTo: 10_000, processingQueues: () => false })
    registerBacklogMetrics(thread, { role: () => 'all' })
    const lines = (text: string) => text.split('\n').filter((l) => l.startsWith('switchboard_destination_'))
    const both = AggregatorRegistry.aggregate([await main.metrics.getMetricsAsJSON(), await thread.metrics.getMetricsAsJSON()] as Parameters<typeof AggregatorRegistry.aggregate>[0])
    // Counted by both threads, the five showed as ten and the oldest as 80 s.
    expect(lines(await both.metrics())).toEqual([
      'switchboard_destination_queue_depth{destination="crm"} 5',
      'switchboard_destination_oldest_undelivered_seconds{destination="crm"} 40',
    ])
    // A receiver (--role receiver) leaves the outbox to the worker that delivers it.
    const receiver: Runtime = { ...h.rt, metrics: new Registry() }
    registerBacklogMetrics(receiver, { role: () => 'receiver', countUpTo: 10_000, processingQueues: () => false })
    threadRunning = false
    expect(lines(await receiver.metrics.metrics())).toEqual([])
  })
})
