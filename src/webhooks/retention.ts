import type { Runtime } from '../runtime.ts'
import { deleteInChunks, PURGE_LEASE_MS, purgeRun, type DeleteInChunksOptions } from '../db/delete-in-chunks.ts'
import { recordPurge } from '../db/purge-metrics.ts'
import { acquireLease, releaseLease } from './lease.ts'
import { yieldToReceiver } from './receiver-load.ts'

const DAY_MS = 86_400_000

/**
 * The oldest time kept: EVENT_RETENTION_DAYS back, and never less than 30 days (a replayed or re-sent id is
 * still recognised long after the provider's ~5.5 minutes of retries). Events and their deliveries share it.
 */
export function retentionCutoff(rt: Runtime): number {
  return rt.clock.now() - Math.max(30, rt.config.webhook.retentionDays) * DAY_MS
}

export interface PurgeResult {
  events: number
  rejections: number
  skipped: boolean
}

/**
 * Deletes events received before the retention window (≥ 30 days, so a replayed or re-sent id is still
 * recognised long after the provider's ~5.5 minutes of retries). Events still waiting to be processed
 * (pending, failed) are never purged; neither is anything inside the window. In chunks (src/db/delete-in-chunks.ts),
 * each through the (status, received_at) index, so the receiver's commits are never held up for long.
 */
export async function purgeOldEvents(rt: Runtime, options: DeleteInChunksOptions = {}): Promise<PurgeResult> {
  if (!(await acquireLease(rt, 'webhooks:purge', PURGE_LEASE_MS))) return { events: 0, rejections: 0, skipped: true }
  try {
    const cutoff = retentionCutoff(rt)
    // One deadline for all of this run's deletions; a burst at the receiver goes first, as for processing.
    const run = purgeRun({ beforeChunk: () => yieldToReceiver(rt), ...options })
    const db = rt.store.db
    const events = await deleteInChunks(async (limit) => {
      const deleted = await db
        .deleteFrom('webhook_events')
        .where('event_id', 'in', db.selectFrom('webhook_events').select('event_id').where('status', 'in', ['processed', 'dead']).where('received_at', '<', cutoff).limit(limit))
        .executeTakeFirst()
      return Number(deleted.numDeletedRows)
    }, run)
    // A row per minute, target and reason at most: one statement.
    const rejections = await db.deleteFrom('webhook_rejections').where('bucket_at', '<', cutoff).executeTakeFirst()
    const result = { events: events.rows, rejections: Number(rejections.numDeletedRows), skipped: false }
    recordPurge(rt.metrics, 'webhooks', { webhook_events: result.events, webhook_rejections: result.rejections }, events.more)
    if (result.events || result.rejections) rt.log.info({ ...result, more: events.more }, 'purged old webhook events')
    return result
  } finally {
    await releaseLease(rt, 'webhooks:purge')
  }
}
