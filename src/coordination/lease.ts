import type { Runtime } from '../runtime.ts'

/**
 * Named leases (`leases` table) so one replica at a time runs a job. Taking one is a single atomic
 * statement each way: insert-or-ignore for a new name, else an UPDATE guarded by expiry or ownership.
 */
export async function acquireLease(rt: Runtime, name: string, ttlMs: number, owner = rt.instanceId): Promise<boolean> {
  const now = rt.clock.now()
  const inserted = await rt.store.db
    .insertInto('leases')
    .values({ name, owner, expires_at: now + ttlMs })
    .onConflict((oc) => oc.column('name').doNothing())
    .executeTakeFirst()
  if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1) return true
  const updated = await rt.store.db
    .updateTable('leases')
    .set({ owner, expires_at: now + ttlMs })
    .where('name', '=', name)
    .where((eb) => eb.or([eb('expires_at', '<', now), eb('owner', '=', owner)]))
    .executeTakeFirst()
  return Number(updated.numUpdatedRows) === 1
}

export async function releaseLease(rt: Runtime, name: string, owner = rt.instanceId): Promise<void> {
  await rt.store.db.deleteFrom('leases').where('name', '=', name).where('owner', '=', owner).execute()
}
