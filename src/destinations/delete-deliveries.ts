import type { Kysely, SelectQueryBuilder } from 'kysely'
import type { Database } from '../db/schema.ts'
import { inImmediateTransaction } from '../db/sqlite-transaction.ts'
import type { Runtime } from '../runtime.ts'

/** The deliveries a chunk deletes: their ids, at most `limit`, read through `db` (the chunk's transaction on Postgres). */
export type DeliveriesToDelete = (db: Kysely<Database>, limit: number) => SelectQueryBuilder<Database, 'destination_deliveries', { id: string }>

/**
 * Deletes one chunk of deliveries with their attempt logs, in one transaction; resolves with how many of each. A
 * chunk reads its ids, then deletes. On SQLite it takes the write lock first (BEGIN IMMEDIATE): a transaction that
 * began by reading could not write once the receiver's writer had committed since (SQLITE_BUSY_SNAPSHOT), which
 * under steady ingest failed most runs of the purge. On Postgres the ids are locked as read, skipping rows another
 * transaction holds: a replay that turns one pending meanwhile either waits for this chunk (and finds it gone) or
 * keeps its row out of it — never pending, deleted.
 */
export async function deleteDeliveryChunk(rt: Runtime, chosen: DeliveriesToDelete, limit: number): Promise<{ attempts: number; deliveries: number }> {
  const db = rt.store.db
  if (rt.store.sqlite) {
    return inImmediateTransaction(rt.store, (q) => {
      const ids = q.all(chosen(db, limit).compile()).map((r) => r.id)
      if (ids.length === 0) return { attempts: 0, deliveries: 0 }
      return {
        attempts: q.run(db.deleteFrom('destination_attempts').where('delivery_id', 'in', ids).compile()),
        deliveries: q.run(db.deleteFrom('destination_deliveries').where('id', 'in', ids).compile()),
      }
    })
  }
  return db.transaction().execute(async (trx) => {
    const ids = (await chosen(trx, limit).forUpdate().skipLocked().execute()).map((r) => r.id)
    if (ids.length === 0) return { attempts: 0, deliveries: 0 }
    return {
      attempts: Number((await trx.deleteFrom('destination_attempts').where('delivery_id', 'in', ids).executeTakeFirst()).numDeletedRows),
      deliveries: Number((await trx.deleteFrom('destination_deliveries').where('id', 'in', ids).executeTakeFirst()).numDeletedRows),
    }
  })
}
