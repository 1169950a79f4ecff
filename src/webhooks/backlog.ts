import type { Runtime } from '../runtime.ts'

export interface Backlog {
  /** Stored events not yet processed (pending, or failed and waiting for a retry). */
  pending: number
  /** Age of the oldest of them (ms), 0 when none. */
  oldestAgeMs: number
}

/** The inbox's backlog: what /metrics and /readyz report. */
export async function inboxBacklog(rt: Runtime): Promise<Backlog> {
  const row = await rt.store.db
    .selectFrom('webhook_events')
    .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min<number>('received_at').as('oldest')])
    .where('status', 'in', ['pending', 'failed'])
    .executeTakeFirst()
  const oldest = row?.oldest === null || row?.oldest === undefined ? undefined : Number(row.oldest)
  return { pending: Number(row?.n ?? 0), oldestAgeMs: oldest === undefined ? 0 : Math.max(0, rt.clock.now() - oldest) }
}
