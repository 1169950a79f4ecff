import type { Runtime } from '../runtime.ts'
import { deleteInChunks, type DeleteInChunksOptions } from '../db/delete-in-chunks.ts'
import { runRetentionPurge } from '../coordination/retention-run.ts'

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
export function purgeOldEvents(rt: Runtime, options: DeleteInChunksOptions = {}): Promise<PurgeResult> {
  return runRetentionPurge(rt, 'webhooks', 'webhook events', { events: 0, rejections: 0 }, options, async ({ cutoff, chunks, counted }) => {
    const db = rt.store.db
    const events = counted(
      await deleteInChunks(async (limit) => {
        const deleted = await db
          .deleteFrom('webhook_events')
          .where('event_id', 'in', db.selectFrom('webhook_events').select('event_id').where('status', 'in', ['processed', 'dead']).where('received_at', '<', cutoff).limit(limit))
          .executeTakeFirst()
        return Number(deleted.numDeletedRows)
      }, chunks),
    )
    // A row per minute, target and reason at most: one statement.
    const rejections = Number((await db.deleteFrom('webhook_rejections').where('bucket_at', '<', cutoff).executeTakeFirst()).numDeletedRows)
    return { counts: { events, rejections }, tables: { webhook_events: events, webhook_rejections: rejections } }
  })
}
