import type { Kysely } from 'kysely'
import type { Database } from '../db/schema.ts'
import { providerTimeMs } from '../utils/iso-datetime.ts'

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
 * nothing of that age was ever purged (a fresh install fed a sample event): `mayHaveBeenForgotten` says.
 */
export function oldEnoughToBeForgotten(timestamp: unknown, nowMs: number, retentionDays: number): number | null {
  if (typeof timestamp !== 'string') return null
  const created = providerTimeMs(timestamp)
  return Number.isFinite(created) && nowMs - created > (rememberedDays(retentionDays) - 1) * DAY_MS ? created : null
}

/** The purge's note: events received before this instant may be gone (NaN when nothing was ever purged). */
async function forgottenBefore(db: Kysely<Database>): Promise<number> {
  const row = await db.selectFrom('kv_state').select('value').where('namespace', '=', NAMESPACE).where('key', '=', KEY).executeTakeFirst()
  return row ? Number(JSON.parse(row.value)) : NaN
}

/** Whether an event created at `createdMs` may have had its id purged: the purge's note, with the day to spare. */
export async function mayHaveBeenForgotten(db: Kysely<Database>, createdMs: number): Promise<boolean> {
  const before = await forgottenBefore(db)
  return Number.isFinite(before) && createdMs < before + DAY_MS
}

/** Noted by the purge before it deletes events received before `cutoff` (never moved back). */
export async function noteForgetting(db: Kysely<Database>, cutoff: number, now: number): Promise<void> {
  if ((await forgottenBefore(db)) >= cutoff) return
  const value = JSON.stringify(cutoff)
  await db
    .insertInto('kv_state')
    .values({ namespace: NAMESPACE, key: KEY, value, updated_at: now })
    .onConflict((oc) => oc.columns(['namespace', 'key']).doUpdateSet({ value, updated_at: now }))
    .execute()
}
