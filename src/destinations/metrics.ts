import { Counter, Gauge, Histogram } from 'prom-client'
import type { Runtime } from '../runtime.ts'

export interface DestinationMetrics {
  deliveries: Counter<'destination' | 'result'>
  attemptSeconds: Histogram<'destination'>
  paused: Gauge<'destination'>
  disabled: Gauge<'destination'>
}

const cache = new WeakMap<object, DestinationMetrics>()

/** Forwarding metrics, registered once per registry (the backlog's gauges are src/backlog-metrics.ts's). */
export function destinationMetrics(rt: Runtime): DestinationMetrics {
  const known = cache.get(rt.metrics)
  if (known) return known
  const registers = [rt.metrics]
  const metrics: DestinationMetrics = {
    deliveries: new Counter({ name: 'switchboard_destination_deliveries_total', help: 'Delivery attempts by destination and result (delivered, retry, dead, disabled)', labelNames: ['destination', 'result'], registers }),
    attemptSeconds: new Histogram({
      name: 'switchboard_destination_attempt_seconds',
      help: 'Latency of delivery attempts',
      labelNames: ['destination'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    paused: new Gauge({ name: 'switchboard_destination_paused', help: '1 while the circuit breaker pauses a destination in this replica', labelNames: ['destination'], registers }),
    disabled: new Gauge({ name: 'switchboard_destination_disabled', help: '1 while a destination is disabled (it answered 410 Gone)', labelNames: ['destination'], registers }),
  }
  for (const { name } of rt.config.destinations.list) {
    metrics.paused.set({ destination: name }, 0)
    metrics.disabled.set({ destination: name }, 0)
  }
  cache.set(rt.metrics, metrics)
  return metrics
}
