import type { Runtime } from '../runtime.ts'
import { acquireLease, releaseLease } from '../webhooks/lease.ts'
import { retentionCutoff } from '../webhooks/retention.ts'

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
 * One replica at a time (a lease).
 */
export async function purgeOldDeliveries(rt: Runtime): Promise<DeliveryPurgeResult> {
  if (!(await acquireLease(rt, 'destinations:purge', 10 * 60_000))) return { deliveries: 0, attempts: 0, payloads: 0, skipped: true }
  try {
    const cutoff = retentionCutoff(rt)
    const result = await rt.store.db.transaction().execute(async (trx) => {
      const finished = trx.selectFrom('destination_deliveries').select('id').where('created_at', '<', cutoff).where('status', 'in', ['delivered', 'dead'])
      const attempts = await trx.deleteFrom('destination_attempts').where('delivery_id', 'in', finished).executeTakeFirst()
      const deliveries = await trx.deleteFrom('destination_deliveries').where('created_at', '<', cutoff).where('status', 'in', ['delivered', 'dead']).executeTakeFirst()
      // A body goes with its event's last delivery (a pending one, however old, keeps it).
      const payloads = await trx
        .deleteFrom('destination_payloads')
        .where('created_at', '<', cutoff)
        .where(({ not, exists, selectFrom }) => not(exists(selectFrom('destination_deliveries as d').select('d.id').whereRef('d.event_id', '=', 'destination_payloads.event_id'))))
        .executeTakeFirst()
      return { deliveries: Number(deliveries.numDeletedRows), attempts: Number(attempts.numDeletedRows), payloads: Number(payloads.numDeletedRows), skipped: false }
    })
    if (result.deliveries || result.attempts) rt.log.info(result, 'purged old deliveries')
    return result
  } finally {
    await releaseLease(rt, 'destinations:purge')
  }
}
