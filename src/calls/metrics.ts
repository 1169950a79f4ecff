import { Counter, Gauge } from 'prom-client'
import { defineMetrics } from '../utils/define-metrics.ts'

/** The call queue's sends' Prometheus metrics, registered once per registry (wherever a call is sent). */
export interface CallMetrics {
  placed: Counter<'status'>
  retried: Counter<'reason'>
  failed: Counter<'reason'>
}

export const callMetrics = defineMetrics((registers): CallMetrics => ({
  placed: new Counter({ name: 'switchboard_calls_placed_total', help: 'Calls the provider accepted from the queue, by status (initiated, scheduled, recovered)', labelNames: ['status'], registers }),
  retried: new Counter({ name: 'switchboard_calls_retried_total', help: 'Queued calls sent again later, by reason (rate_limit, number_rate_limit, concurrency_limit, transient)', labelNames: ['reason'], registers }),
  failed: new Counter({ name: 'switchboard_calls_failed_total', help: 'Queued calls that ended failed or rejected, by reason (the provider\'s error type; other for a type the spec does not list)', labelNames: ['reason'], registers }),
}))

/**
 * The queue's depth, registered where the queue runs only: a process that sends its own calls without it (a receiver's
 * Run now, a CLI command) listed a depth of 0 nothing ever set, beside a queue that held calls.
 */
export const callQueueDepth = defineMetrics(
  (registers): Gauge => new Gauge({ name: 'switchboard_call_queue_depth', help: 'Calls waiting in the paced queue (this process\'s last look)', registers }),
)
