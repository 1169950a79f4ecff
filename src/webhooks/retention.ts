import type { Runtime } from '../runtime.ts'
import { acquireLease, releaseLease } from './lease.ts'

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
 * (pending, failed) are never purged; neither is anything inside the window.
 */
export async function purgeOldEvents(rt: Runtime): Promise<PurgeResult> {
  if (!(await acquireLease(rt, 'webhooks:purge', 10 * 60_000))) return { events: 0, rejections: 0, skipped: true }
  try {
    const cutoff = retentionCutoff(rt)
    const events = await rt.store.db
      .deleteFrom('webhook_events')
      .where('received_at', '<', cutoff)
      .where('status', 'in', ['processed', 'dead'])
      .executeTakeFirst()
    const rejections = await rt.store.db.deleteFrom('webhook_rejections').where('bucket_at', '<', cutoff).executeTakeFirst()
    const result = { events: Number(events.numDeletedRows), rejections: Number(rejections.numDeletedRows), skipped: false }
    if (result.events || result.rejections) rt.log.info(result, 'purged old webhook events')
    return result
  } finally {
    await releaseLease(rt, 'webhooks:purge')
  }
}
