import { Counter, Gauge } from 'prom-client'
import { defineMetrics } from '../utils/define-metrics.ts'

/** The call queue's and the upstream client's Prometheus metrics, registered once per registry. */
export interface CallMetrics {
  queueDepth: Gauge
  placed: Counter<'status'>
  retried: Counter<'reason'>
  failed: Counter<'reason'>
}

export const callMetrics = defineMetrics((registers): CallMetrics => ({
  queueDepth: new Gauge({ name: 'switchboard_call_queue_depth', help: 'Calls waiting in the paced queue (this process\'s last look)', registers }),
  placed: new Counter({ name: 'switchboard_calls_placed_total', help: 'Calls the provider accepted from the queue, by status (initiated, scheduled, recovered)', labelNames: ['status'], registers }),
  retried: new Counter({ name: 'switchboard_calls_retried_total', help: 'Queued calls sent again later, by reason (rate_limit, number_rate_limit, concurrency_limit, transient)', labelNames: ['reason'], registers }),
  failed: new Counter({ name: 'switchboard_calls_failed_total', help: 'Queued calls that ended failed or rejected, by reason (the provider\'s error type; other for a type the spec does not list)', labelNames: ['reason'], registers }),
}))
