import { sql } from 'kysely'
import type { Runtime } from '../runtime.ts'
import { acquireLease, releaseLease } from '../webhooks/lease.ts'
import { retentionCutoff } from '../webhooks/retention.ts'

/** Fires deleted per statement: each a short write, so the receiver's commits never wait long for the lock. */
export const FIRES_PURGE_CHUNK = 2_000
/** Statements per purge run: at most this × FIRES_PURGE_CHUNK rows an hour (the rest waits for the next run). */
const MAX_CHUNKS = 250

export interface FiresPurgeResult {
  fires: number
  skipped: boolean
}

/**
 * Deletes the queue rows of event-triggered recipes (`recipe_event_fires`) once they can no longer matter: run or
 * dead-lettered, fired before the retention window (EVENT_RETENTION_DAYS, ≥ 30 days), and their event itself
 * purged. While its event is kept a fire is what makes the recipe run once per event (a redelivered or replayed
 * event finds it and does not fire again), so it stays exactly as long as the event does. Without this the table
 * grew by a row per event and subscribed recipe for ever. Deleted in chunks, each its own statement.
 */
export async function purgeOldFires(rt: Runtime, options: { chunk?: number } = {}): Promise<FiresPurgeResult> {
  if (!(await acquireLease(rt, 'recipes:purge-fires', 10 * 60_000))) return { fires: 0, skipped: true }
  const chunk = options.chunk ?? FIRES_PURGE_CHUNK
  try {
    const cutoff = retentionCutoff(rt)
    let fires = 0
    for (let i = 0; i < MAX_CHUNKS; i++) {
      const result = await rt.store.db
        .deleteFrom('recipe_event_fires')
        .where(({ eb, refTuple, selectFrom }) =>
          eb(
            refTuple('recipe', 'event_id'),
            'in',
            selectFrom('recipe_event_fires as f')
              .select(['f.recipe', 'f.event_id'])
              .where('f.fired_at', '<', cutoff)
              .where('f.status', 'in', ['done', 'dead'])
              .where(({ not, exists, selectFrom: inner }) => not(exists(inner('webhook_events as e').select(sql.lit(1).as('one')).whereRef('e.event_id', '=', 'f.event_id'))))
              .limit(chunk)
              .$asTuple('recipe', 'event_id'),
          ),
        )
        .executeTakeFirst()
      const n = Number(result.numDeletedRows)
      fires += n
      if (n < chunk) break
    }
    if (fires) rt.log.info({ fires }, 'purged old recipe fires')
    return { fires, skipped: false }
  } finally {
    await releaseLease(rt, 'recipes:purge-fires')
  }
}
