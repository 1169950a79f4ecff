import { sql } from 'kysely'
import type { Runtime } from '../runtime.ts'
import { queuedRecipes } from '../recipes/claims.ts'
import { deleteInChunks, type DeleteInChunksOptions } from '../db/delete-in-chunks.ts'
import { runRetentionPurge } from '../coordination/retention-run.ts'
import { noteForgetting } from './forgotten-event.ts'

export interface PurgeResult {
  events: number
  rejections: number
  skipped: boolean
}

/**
 * Deletes events received before the retention window (≥ 30 days, so a replayed or re-sent id is still
 * recognised long after the provider's ~5.5 minutes of retries). Events still waiting to be processed
 * (pending, failed) are never purged; neither is anything inside the window, nor an event a recipe has still to run
 * (its `recipe_event_fires` row pending or failed: a recipe broken or removed for longer than the window runs it once
 * back, and would otherwise find it gone and dead-letter it). In chunks (src/db/delete-in-chunks.ts), each through the
 * (status, received_at) index, so the receiver's commits are never held up for long.
 */
export function purgeOldEvents(rt: Runtime, options: DeleteInChunksOptions = {}): Promise<PurgeResult> {
  return runRetentionPurge(rt, 'webhooks', 'webhook events', { events: 0, rejections: 0 }, options, async ({ cutoff, chunks, counted }) => {
    const db = rt.store.db
    // The recipes with queued events, read once: the check below then finds an event's fire by the queue's primary
    // key (recipe, event_id), one probe per recipe (src/recipes/claims.ts → queuedRecipes).
    const recipes = await queuedRecipes(rt)
    // Ids about to go: noted first, so the receiver refuses a re-sent delivery of one even if the purge stops midway.
    // Only when there is something to delete — a fresh install fed an old sample event has forgotten nothing.
    const anyExpired = await db.selectFrom('webhook_events').select('event_id').where('status', 'in', ['processed', 'dead']).where('received_at', '<', cutoff).limit(1).executeTakeFirst()
    if (anyExpired) await noteForgetting(db, cutoff, rt.clock.now())
    const events = counted(
      await deleteInChunks(async (limit) => {
        // Purgeable: processed or dead, before the cutoff, and with no fire a recipe has still to run. On Postgres
        // asked twice — of the rows the subquery picks, and again of each row as the DELETE locks it: a replay that
        // turned the event pending while the DELETE waited for its lock would otherwise be deleted with it (Postgres
        // re-checks only the outer conditions on the row as it now is). SQLite's one writer runs the statement whole
        // under its lock, so the subquery's answer holds; and there the outer conditions made the planner walk the
        // (status, received_at) index over every expired event for each chunk (76 deleted a second, the receiver's
        // p99 at 270 ms during the purge, against 230/s and ~25 ms) instead of the ids by primary key.
        const noFireToRun = (id: 'e.event_id' | 'webhook_events.event_id') =>
          db
            .selectFrom('recipe_event_fires as f')
            .select(sql.lit(1).as('one'))
            .where('f.recipe', 'in', recipes)
            .where('f.event_id', '=', sql.ref<string>(id))
            .where('f.status', 'in', ['pending', 'failed'])
        let expired = db.selectFrom('webhook_events as e').select('e.event_id').where('e.status', 'in', ['processed', 'dead']).where('e.received_at', '<', cutoff)
        if (recipes.length > 0) expired = expired.where(({ not, exists }) => not(exists(noFireToRun('e.event_id'))))
        let purge = db.deleteFrom('webhook_events').where('event_id', 'in', expired.limit(limit))
        if (rt.store.dialect === 'postgres') {
          purge = purge.where('status', 'in', ['processed', 'dead']).where('received_at', '<', cutoff)
          if (recipes.length > 0) purge = purge.where(({ not, exists }) => not(exists(noFireToRun('webhook_events.event_id'))))
        }
        const deleted = await purge.executeTakeFirst()
        return Number(deleted.numDeletedRows)
      }, chunks),
    )
    // A row per minute, target and reason at most: one statement.
    const rejections = Number((await db.deleteFrom('webhook_rejections').where('bucket_at', '<', cutoff).executeTakeFirst()).numDeletedRows)
    return { counts: { events, rejections }, tables: { webhook_events: events, webhook_rejections: rejections } }
  })
}
