import type { Runtime } from '../runtime.ts'
import { deleteInChunks, type DeleteInChunksOptions } from '../db/delete-in-chunks.ts'
import { leadingKeys } from '../db/leading-keys.ts'
import { inImmediateTransaction } from '../db/sqlite-transaction.ts'
import { runRetentionPurge } from '../coordination/retention-run.ts'

export interface DeliveryPurgeResult {
  deliveries: number
  attempts: number
  /** Event bodies no delivery refers to any more. */
  payloads: number
  skipped: boolean
}

/**
 * Deletes finished deliveries (delivered, or dead-lettered) created before the retention window
 * (EVENT_RETENTION_DAYS, ≥ 30 days — as long as the events themselves are kept), with their attempt
 * logs and the event bodies no delivery needs any more. Pending deliveries are never purged, however old.
 * One replica at a time (a lease); in chunks (src/db/delete-in-chunks.ts): a delivery and its attempts go
 * in one transaction, a destination at a time through its (destination, created_at) index.
 */
export function purgeOldDeliveries(rt: Runtime, options: DeleteInChunksOptions = {}): Promise<DeliveryPurgeResult> {
  return runRetentionPurge(rt, 'destinations', 'deliveries', { deliveries: 0, attempts: 0, payloads: 0 }, options, async ({ cutoff, chunks, counted }) => {
    const db = rt.store.db
    let attempts = 0
    let deliveries = 0
    // Destinations no longer configured included.
    for (const destination of await leadingKeys(db, 'destination_deliveries', 'destination')) {
      const finished = (q: typeof db, limit: number) =>
        q
          .selectFrom('destination_deliveries')
          .select('id')
          .where('destination', '=', destination)
          .where('created_at', '<', cutoff)
          .where('status', 'in', ['delivered', 'dead'])
          .limit(limit)
      deliveries += counted(
        await deleteInChunks(async (limit) => {
          // A chunk reads its ids, then deletes. On SQLite it takes the write lock first (BEGIN IMMEDIATE): a
          // transaction that began by reading could not write once the receiver's writer had committed since
          // (SQLITE_BUSY_SNAPSHOT), which under steady ingest failed most runs of the purge.
          const chunk = rt.store.sqlite
            ? await inImmediateTransaction(rt.store, (q) => {
                const ids = q.all(finished(db, limit).compile()).map((r) => r.id)
                if (ids.length === 0) return { attempts: 0, deliveries: 0 }
                return {
                  attempts: q.run(db.deleteFrom('destination_attempts').where('delivery_id', 'in', ids).compile()),
                  deliveries: q.run(db.deleteFrom('destination_deliveries').where('id', 'in', ids).compile()),
                }
              })
            : await db.transaction().execute(async (trx) => {
                // Locked as read, skipping rows another transaction holds: a replay that turns one pending meanwhile
                // either waits for this chunk (and finds it gone) or keeps its row out of it — never pending, deleted.
                const ids = (await finished(trx, limit).forUpdate().skipLocked().execute()).map((r) => r.id)
                if (ids.length === 0) return { attempts: 0, deliveries: 0 }
                return {
                  attempts: Number((await trx.deleteFrom('destination_attempts').where('delivery_id', 'in', ids).executeTakeFirst()).numDeletedRows),
                  deliveries: Number((await trx.deleteFrom('destination_deliveries').where('id', 'in', ids).executeTakeFirst()).numDeletedRows),
                }
              })
          attempts += chunk.attempts
          return chunk.deliveries
        }, chunks),
      )
    }
    // A body goes with its event's last delivery (a pending one, however old, keeps it).
    const payloads = counted(
      await deleteInChunks(async (limit) => {
        const deleted = await db
          .deleteFrom('destination_payloads')
          .where(
            'event_id',
            'in',
            db
              .selectFrom('destination_payloads as p')
              .select('p.event_id')
              .where('p.created_at', '<', cutoff)
              .where(({ not, exists, selectFrom }) => not(exists(selectFrom('destination_deliveries as d').select('d.id').whereRef('d.event_id', '=', 'p.event_id'))))
              .limit(limit),
          )
          .executeTakeFirst()
        return Number(deleted.numDeletedRows)
      }, chunks),
    )
    return {
      counts: { deliveries, attempts, payloads },
      tables: { destination_deliveries: deliveries, destination_attempts: attempts, destination_payloads: payloads },
    }
  })
}
