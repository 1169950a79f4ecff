import { sql } from 'kysely'
import { Counter, Gauge, Histogram } from 'prom-client'
import type { Runtime } from '../runtime.ts'

export interface DestinationMetrics {
  deliveries: Counter<'destination' | 'result'>
  attemptSeconds: Histogram<'destination'>
  queueDepth: Gauge<'destination'>
  oldestSeconds: Gauge<'destination'>
  paused: Gauge<'destination'>
  disabled: Gauge<'destination'>
}

const cache = new WeakMap<object, DestinationMetrics>()

/**
 * Forwarding metrics, registered once per registry. Queue depth and the age of the oldest undelivered
 * delivery are read from the outbox at scrape time, so every replica reports the shared truth.
 */
export function destinationMetrics(rt: Runtime): DestinationMetrics {
  const known = cache.get(rt.metrics)
  if (known) return known
  const registers = [rt.metrics]
  const names = () => rt.config.destinations.list.map((d) => d.name)
  let backlog: Promise<Map<string, { depth: number; oldest: number | null }>> | undefined
  // One query serves both gauges of a scrape.
  const readBacklog = () =>
    (backlog ??= rt.store.db
      .selectFrom('destination_deliveries')
      .select((eb) => ['destination', eb.fn.countAll<number>().as('n'), eb.fn.min<number>('created_at').as('oldest')])
      // A literal: it names the partial index's condition (migration 0010), whose entries hold `created_at` (0015), so
      // the scrape reads the backlog from the index alone, not row by row.
      .where('status', '=', sql.lit('pending'))
      .groupBy('destination')
      .execute()
      .then((rows) => new Map(rows.map((r) => [r.destination, { depth: Number(r.n), oldest: r.oldest === null ? null : Number(r.oldest) }])))
      .finally(() => setImmediate(() => (backlog = undefined))))
  const metrics: DestinationMetrics = {
    deliveries: new Counter({ name: 'switchboard_destination_deliveries_total', help: 'Delivery attempts by destination and result (delivered, retry, dead, disabled)', labelNames: ['destination', 'result'], registers }),
    attemptSeconds: new Histogram({
      name: 'switchboard_destination_attempt_seconds',
      help: 'Latency of delivery attempts',
      labelNames: ['destination'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    queueDepth: new Gauge({
      name: 'switchboard_destination_queue_depth',
      help: 'Deliveries not yet delivered (waiting or retrying), per destination',
      labelNames: ['destination'],
      registers,
      async collect() {
        const map = await readBacklog().catch(() => new Map<string, { depth: number; oldest: number | null }>())
        this.reset()
        for (const name of new Set([...names(), ...map.keys()])) this.set({ destination: name }, map.get(name)?.depth ?? 0)
      },
    }),
    oldestSeconds: new Gauge({
      name: 'switchboard_destination_oldest_undelivered_seconds',
      help: 'Age of the oldest delivery not yet delivered, per destination (0 when none)',
      labelNames: ['destination'],
      registers,
      async collect() {
        const map = await readBacklog().catch(() => new Map<string, { depth: number; oldest: number | null }>())
        const now = rt.clock.now()
        this.reset()
        for (const name of new Set([...names(), ...map.keys()])) {
          const oldest = map.get(name)?.oldest
          this.set({ destination: name }, oldest == null ? 0 : Math.max(0, (now - oldest) / 1000))
        }
      },
    }),
    paused: new Gauge({ name: 'switchboard_destination_paused', help: '1 while the circuit breaker pauses a destination in this replica', labelNames: ['destination'], registers }),
    disabled: new Gauge({ name: 'switchboard_destination_disabled', help: '1 while a destination is disabled (it answered 410 Gone)', labelNames: ['destination'], registers }),
  }
  for (const name of names()) {
    metrics.paused.set({ destination: name }, 0)
    metrics.disabled.set({ destination: name }, 0)
  }
  cache.set(rt.metrics, metrics)
  return metrics
}
