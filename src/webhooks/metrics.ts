import { Counter, Gauge, Histogram } from 'prom-client'
import { defineMetrics } from '../utils/define-metrics.ts'

/** The receiver's Prometheus metrics, registered once per registry (apps and workers share them). */
export interface WebhookMetrics {
  received: Counter<'target'>
  accepted: Counter<'target'>
  duplicates: Counter<'target'>
  rejected: Counter<'target' | 'reason'>
  processed: Counter<'source'>
  failures: Counter<'source'>
  dead: Counter<'source'>
  reconciled: Counter
  ingestSeconds: Histogram<'outcome'>
  /** 1 while commits fail for lack of space (SQLITE_FULL / disk_full); back to 0 at the next commit. */
  storageFull: Gauge
  /** From receipt to processed. */
  lagSeconds: Histogram<'source'>
  /** Deliveries per group commit of the inbox: small batches mean a commit (and a thread wake-up) per event. */
  commitBatchSize: Histogram
  /** Time processing held back while the receiver took a burst (src/coordination/receiver-load.ts). */
  heldSeconds: Counter
  /** 1 while processing holds back for the receiver. */
  holding: Gauge
}

export const webhookMetrics = defineMetrics((registers): WebhookMetrics => ({
  received: new Counter({ name: 'switchboard_webhooks_received_total', help: 'Webhook deliveries received', labelNames: ['target'], registers }),
  accepted: new Counter({ name: 'switchboard_webhooks_accepted_total', help: 'Webhook events stored for the first time', labelNames: ['target'], registers }),
  duplicates: new Counter({ name: 'switchboard_webhooks_duplicates_total', help: 'Deliveries of an event id already stored', labelNames: ['target'], registers }),
  rejected: new Counter({ name: 'switchboard_webhooks_rejected_total', help: 'Deliveries refused, by reason', labelNames: ['target', 'reason'], registers }),
  processed: new Counter({ name: 'switchboard_webhook_events_processed_total', help: 'Stored events processed', labelNames: ['source'], registers }),
  failures: new Counter({ name: 'switchboard_webhook_processing_failures_total', help: 'Processing attempts that failed', labelNames: ['source'], registers }),
  dead: new Counter({ name: 'switchboard_webhook_events_dead_total', help: 'Events that exhausted their processing attempts', labelNames: ['source'], registers }),
  reconciled: new Counter({ name: 'switchboard_webhook_reconciled_total', help: 'Events synthesized by reconciliation', registers }),
  ingestSeconds: new Histogram({
    name: 'switchboard_webhook_ingest_seconds',
    help: 'Time from request to answer at the receiver',
    labelNames: ['outcome'],
    buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers,
  }),
  storageFull: new Gauge({
    name: 'switchboard_storage_full',
    help: '1 while the database refuses writes for lack of space (webhooks are answered 503 meanwhile)',
    registers,
  }),
  lagSeconds: new Histogram({
    name: 'switchboard_processing_lag_seconds',
    help: 'Time from an event being stored to it being processed (read model and every consumer)',
    labelNames: ['source'],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800],
    registers,
  }),
  commitBatchSize: new Histogram({
    name: 'switchboard_webhook_commit_batch_size',
    help: 'Deliveries committed together by the inbox (group commit)',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 400],
    registers,
  }),
  heldSeconds: new Counter({
    name: 'switchboard_processing_held_seconds_total',
    help: 'Time processing held back while the receiver took a burst (PROCESSING_YIELD_ABOVE)',
    registers,
  }),
  holding: new Gauge({ name: 'switchboard_processing_held', help: '1 while processing holds back for the receiver', registers }),
}))
