import type { Runtime } from '../runtime.ts'

export interface Backlog {
  /** Stored events not yet processed (pending, or failed and waiting for a retry); at most `countUpTo` when given. */
  pending: number
  /** True when there are more than `countUpTo` (`pending` is then the cap). */
  capped: boolean
  /** Age of the oldest of them (ms), 0 when none. */
  oldestAgeMs: number
}

const UNPROCESSED = ['pending', 'failed']

/**
 * The inbox's backlog: what /metrics and /readyz report. Counting reads an index entry per unprocessed event
 * (~25 ms for 900,000 on SQLite, where it blocks the calling thread): on the receiver's event loop, pass
 * `countUpTo` and the count stops there. The oldest one is an index seek whatever the size.
 */
export async function inboxBacklog(rt: Runtime, options: { countUpTo?: number } = {}): Promise<Backlog> {
  const db = rt.store.db
  const cap = options.countUpTo
  const counted =
    cap === undefined
      ? db.selectFrom('webhook_events').select((eb) => eb.fn.countAll<number>().as('n')).where('status', 'in', UNPROCESSED)
      : db
          .selectFrom(db.selectFrom('webhook_events').select('event_id').where('status', 'in', UNPROCESSED).limit(cap + 1).as('b'))
          .select((eb) => eb.fn.countAll<number>().as('n'))
  const [count, first] = await Promise.all([
    counted.executeTakeFirst(),
    db.selectFrom('webhook_events').select((eb) => eb.fn.min<number>('received_at').as('oldest')).where('status', 'in', UNPROCESSED).executeTakeFirst(),
  ])
  const n = Number(count?.n ?? 0)
  const capped = cap !== undefined && n > cap
  const oldest = first?.oldest === null || first?.oldest === undefined ? undefined : Number(first.oldest)
  return { pending: capped ? cap : n, capped, oldestAgeMs: oldest === undefined ? 0 : Math.max(0, rt.clock.now() - oldest) }
}
