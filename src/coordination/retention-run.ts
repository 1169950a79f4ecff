import type { Runtime } from '../runtime.ts'
import { PURGE_LEASE_MS, purgeRun, type ChunkedDeletion, type DeleteInChunksOptions } from '../db/delete-in-chunks.ts'
import { recordPurge } from '../db/purge-metrics.ts'
import { acquireLease, releaseLease } from './lease.ts'
import { yieldToReceiver } from './receiver-load.ts'
import { rememberedDays } from '../webhooks/forgotten-event.ts'

const DAY_MS = 86_400_000

/**
 * The oldest time kept: EVENT_RETENTION_DAYS back, and never less than 30 days (a replayed or re-sent id is
 * still recognised long after the provider's ~5.5 minutes of retries). Events and their deliveries share it.
 */
export function retentionCutoff(rt: Runtime): number {
  return rt.clock.now() - rememberedDays(rt.config.webhook.retentionDays) * DAY_MS
}

/** What a purge's deletions share within one run. */
export interface PurgeRun {
  /** Rows older than this are past the retention window. */
  cutoff: number
  /** For every deleteInChunks of the run: one deadline, the signal, and a burst at the receiver going first. */
  chunks: DeleteInChunksOptions
  /** Notes a deletion's outcome (whether it stopped with rows left) and returns the rows it deleted. */
  counted(done: ChunkedDeletion): number
}

/**
 * One run of a retention purge (`webhooks`, `destinations`, `recipes`, `history`): on one replica at a time (the lease
 * `<name>:purge`; `skipped` when another holds it), its rows per table recorded in the metrics and logged as
 * `purged old <what>`. `body` returns the counts the caller reports and the rows per table they came from; `cutoff`
 * is the window's start (EVENT_RETENTION_DAYS back unless told otherwise).
 */
export async function runRetentionPurge<Counts extends Record<string, number>>(
  rt: Runtime,
  name: string,
  what: string,
  none: Counts,
  options: DeleteInChunksOptions,
  body: (run: PurgeRun) => Promise<{ counts: Counts; tables: Record<string, number> }>,
  cutoff: () => number = () => retentionCutoff(rt),
): Promise<Counts & { skipped: boolean }> {
  const lease = `${name}:purge`
  if (!(await acquireLease(rt, lease, PURGE_LEASE_MS))) return { ...none, skipped: true }
  try {
    let more = false
    const run: PurgeRun = {
      cutoff: cutoff(),
      chunks: purgeRun({ beforeChunk: () => yieldToReceiver(rt), ...options }),
      counted(done) {
        more ||= done.more
        return done.rows
      },
    }
    const { counts, tables } = await body(run)
    recordPurge(rt.metrics, name, tables, more)
    const fields: Record<string, number | boolean> = { ...counts, more }
    if (Object.values(tables).some((n) => n > 0)) rt.log.info(fields, `purged old ${what}`)
    return { ...counts, skipped: false }
  } finally {
    await releaseLease(rt, lease)
  }
}
