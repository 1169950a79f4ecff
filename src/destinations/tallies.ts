import { sql } from 'kysely'
import type { Runtime } from '../runtime.ts'

/**
 * Postgres: each destination's deliveries counted by status, without reading the outbox. The outbox's triggers
 * (migration `0022_destination_tallies`, src/db/destination-migrations.ts) add a row of changes for every statement
 * that moves a delivery in or out of a status; the counts are the tallies plus the changes not yet folded into them.
 * SQLite counts on its indexes instead (no row visibility to check: ~30 ms with 1,000,000 deliveries kept), so these
 * tables exist on Postgres only.
 */
export interface Tally {
  pending: number
  delivered: number
  dead: number
}

/** How often a replica folds the rows of changes into the tallies. */
export const TALLY_FOLD_EVERY_MS = 60_000

export const keepsTallies = (rt: Runtime): boolean => rt.store.dialect === 'postgres'

const EMPTY: Tally = { pending: 0, delivered: 0, dead: 0 }

/** Every destination's counts, from the tallies and the changes since the last fold. */
export async function readTallies(rt: Runtime): Promise<Map<string, Tally>> {
  const { rows } = await sql<{ destination: string; status: string; n: string | number }>`
    SELECT destination, status, sum(n) AS n FROM (
      SELECT destination, status, n FROM destination_tallies
      UNION ALL
      SELECT destination, status, n FROM destination_tally_changes
    ) counted GROUP BY destination, status`.execute(rt.store.db)
  const tallies = new Map<string, Tally>()
  for (const row of rows) {
    if (row.status !== 'pending' && row.status !== 'delivered' && row.status !== 'dead') continue
    const tally = tallies.get(row.destination) ?? { ...EMPTY }
    tally[row.status] = Number(row.n)
    tallies.set(row.destination, tally)
  }
  return tallies
}

export const tallyOf = (tallies: Map<string, Tally>, destination: string): Tally => tallies.get(destination) ?? EMPTY

/**
 * Rows of changes folded per statement: a backlog of them (a previous version ran alone for a while and folded none)
 * goes in bounded steps, each well inside the statement timeout.
 */
export const FOLD_CHUNK = 50_000

/**
 * Moves the rows of changes into the tallies, a chunk per statement: the rows a statement deletes are the rows it adds,
 * so a reader sees each change once, before or after. Replicas may fold at once: a row of changes another fold deleted
 * first is skipped, and the tallies' upsert waits for the other's commit. Returns how many rows were folded.
 */
export async function foldTallies(rt: Runtime, options: { chunk?: number; signal?: AbortSignal } = {}): Promise<number> {
  const chunk = options.chunk ?? FOLD_CHUNK
  let folded = 0
  for (;;) {
    const { rows } = await sql<{ folded: string | number | null }>`
      WITH moved AS (
        DELETE FROM destination_tally_changes WHERE ctid = ANY(ARRAY(SELECT ctid FROM destination_tally_changes LIMIT ${chunk}))
        RETURNING destination, status, n
      ),
      added AS (
        INSERT INTO destination_tallies (destination, status, n)
        SELECT destination, status, sum(n) FROM moved GROUP BY destination, status
        ON CONFLICT (destination, status) DO UPDATE SET n = destination_tallies.n + excluded.n
      )
      SELECT count(*) AS folded FROM moved`.execute(rt.store.db)
    const n = Number(rows[0]?.folded ?? 0)
    folded += n
    if (n < chunk || options.signal?.aborted) return folded
  }
}
