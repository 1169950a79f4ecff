import type { Kysely } from 'kysely'
import type { Database } from '../db/schema.ts'

const DAY_MS = 86_400_000
/** Where the retention purge notes how far back event ids may be gone. */
const NAMESPACE = 'webhooks'
const KEY = 'forgotten_before'

/** How long a stored event's id is kept (the retention purge's window: EVENT_RETENTION_DAYS, never under 30 days). */
export function rememberedDays(retentionDays: number): number {
  return Math.max(30, retentionDays)
}

/**
 * The provider's creation time of an event (its envelope's signed ISO `timestamp`) when it is old enough for its id
 * to have been purged, a day to spare for the provider's clock; else null (recent, missing or not a date). The
 * provider retries for ~5.5 minutes, so such an event arriving now is a captured delivery sent again — unless
 * nothing of that age was ever purged (a fresh install fed a sample event): `forgottenBefore` says.
 */
export function oldEnoughToBeForgotten(timestamp: unknown, nowMs: number, retentionDays: number): number | null {
  if (typeof timestamp !== 'string') return null
  const created = Date.parse(timestamp)
  return Number.isFinite(created) && nowMs - created > (rememberedDays(retentionDays) - 1) * DAY_MS ? created : null
}

/** Whether an event created at `createdMs` may have had its id purged: the purge's note, with the day to spare. */
export async function mayHaveBeenForgotten(db: Kysely<Database>, createdMs: number): Promise<boolean> {
  const row = await db.selectFrom('kv_state').select('value').where('namespace', '=', NAMESPACE).where('key', '=', KEY).executeTakeFirst()
  const before = row ? Number(JSON.parse(row.value)) : NaN
  return Number.isFinite(before) && createdMs < before + DAY_MS
}

/** Noted by the purge before it deletes events received before `cutoff` (never moved back). */
export async function noteForgetting(db: Kysely<Database>, cutoff: number, now: number): Promise<void> {
  const row = await db.selectFrom('kv_state').select('value').where('namespace', '=', NAMESPACE).where('key', '=', KEY).executeTakeFirst()
  if (row && Number(JSON.parse(row.value)) >= cutoff) return
  const value = JSON.stringify(cutoff)
  await db
    .insertInto('kv_state')
    .values({ namespace: NAMESPACE, key: KEY, value, updated_at: now })
    .onConflict((oc) => oc.columns(['namespace', 'key']).doUpdateSet({ value, updated_at: now }))
    .execute()
}
