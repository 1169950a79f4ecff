import type { Runtime } from '../runtime.ts'
import { deleteInChunks, type DeleteInChunksOptions } from '../db/delete-in-chunks.ts'
import { leadingKeys } from '../db/leading-keys.ts'
import { deleteDeliveryChunk } from './delete-deliveries.ts'
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
          const chunk = await deleteDeliveryChunk(rt, finished, limit)
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
