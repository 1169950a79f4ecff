import type { Runtime } from '../runtime.ts'

/**
 * State replicas share about a destination: disabled after it answered 410 Gone (the receiving app says
 * the endpoint is retired) until an operator runs `destinations enable <name>`. Its deliveries wait.
 */
export async function disableDestination(rt: Runtime, name: string, reason: string): Promise<void> {
  const now = rt.clock.now()
  await rt.store.db
    .insertInto('destination_state')
    .values({ name, disabled_at: now, disabled_reason: reason })
    .onConflict((oc) => oc.column('name').doUpdateSet({ disabled_at: now, disabled_reason: reason }))
    .execute()
}

/** Re-enables a destination; its waiting deliveries fall due at once. Returns false if it was not disabled. */
export async function enableDestination(rt: Runtime, name: string): Promise<boolean> {
  const result = await rt.store.db.updateTable('destination_state').set({ disabled_at: null, disabled_reason: null }).where('name', '=', name).where('disabled_at', 'is not', null).executeTakeFirst()
  return Number(result.numUpdatedRows) > 0
}

/** Disabled destinations with when and why. */
export async function disabledDestinations(rt: Runtime): Promise<Map<string, { at: number; reason: string }>> {
  const rows = await rt.store.db.selectFrom('destination_state').selectAll().where('disabled_at', 'is not', null).execute()
  return new Map(rows.map((r) => [r.name, { at: Number(r.disabled_at), reason: r.disabled_reason ?? '' }]))
}
