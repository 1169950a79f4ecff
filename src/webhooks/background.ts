import type { Runtime } from '../runtime.ts'
import { purgeCallHistory } from '../calls/history-retention.ts'
import { reconcile } from './reconcile.ts'
import { purgeOldEvents } from './retention.ts'
import { every } from '../utils/every.ts'
import { webhookState } from './state.ts'
import { startWorker } from './worker.ts'
import { PURGE_EVERY_MS } from '../db/delete-in-chunks.ts'

/**
 * Starts the webhook background work: the processing worker (which first catches up on events left
 * pending by a crash), periodic reconciliation (RECONCILE_INTERVAL_SECONDS; 0 turns it off), the events'
 * retention purge and, when HISTORY_RETENTION_DAYS is set, the call history's (every 10 minutes). Returns a
 * function that stops it all.
 */
export function startWebhookWorkers(rt: Runtime): () => Promise<void> {
  const state = webhookState(rt)
  const worker = startWorker(rt)
  state.worker = worker
  const stops: Array<() => Promise<void>> = []
  const interval = rt.config.webhook.reconcileIntervalSeconds * 1000
  if (interval > 0) stops.push(every(rt.clock, rt.log, 'reconciliation', Math.min(interval, 10_000), interval, (signal) => reconcile(rt, { signal })))
  stops.push(every(rt.clock, rt.log, 'webhook purge', 60_000, PURGE_EVERY_MS, (signal) => purgeOldEvents(rt, { signal })))
  if (rt.config.history.retentionDays > 0) stops.push(every(rt.clock, rt.log, 'call history purge', 120_000, PURGE_EVERY_MS, (signal) => purgeCallHistory(rt, { signal })))
  return async () => {
    for (const stop of stops) await stop()
    await state.inbox.flush()
    await worker.stop()
    if (state.worker === worker) state.worker = undefined
  }
}
