import type { Runtime } from '../runtime.ts'

/**
 * The processing backlog for the overview: counts per waiting status (dead included), which the one-figure
 * backlog of /readyz and /metrics (src/webhooks/backlog.ts) does not split. It reads the (status, received_at)
 * index, and runs in the processing thread under `serve` (`overviewCountsTask`), off the receiver's loop.
 */
export interface InboxBacklog {
  /** Events waiting for a first attempt, and events waiting for a retry. */
  pending: number
  failed: number
  dead: number
  /** When the oldest pending or failed event was received (epoch ms), or null when there is none. */
  oldestReceivedAt: number | null
}

/** What processing still has to do: counts by waiting status and the oldest waiting event. */
export async function inboxBacklog(rt: Runtime): Promise<InboxBacklog> {
  const db = rt.store.db
  const counts = await db
    .selectFrom('webhook_events')
    .select((eb) => ['status', eb.fn.countAll<number>().as('n')])
    .where('status', 'in', ['pending', 'failed', 'dead'])
    .groupBy('status')
    .execute()
  const oldest = await Promise.all(
    (['pending', 'failed'] as const).map((status) =>
      db.selectFrom('webhook_events').select((eb) => eb.fn.min('received_at').as('at')).where('status', '=', status).executeTakeFirst(),
    ),
  )
  const times = oldest.map((r) => (r?.at === null || r?.at === undefined ? null : Number(r.at))).filter((t): t is number => t !== null)
  const by = (s: string) => Number(counts.find((c) => c.status === s)?.n ?? 0)
  return { pending: by('pending'), failed: by('failed'), dead: by('dead'), oldestReceivedAt: times.length ? Math.min(...times) : null }
}

