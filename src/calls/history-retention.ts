import type { Runtime } from '../runtime.ts'
import { deleteInChunks, type DeleteInChunksOptions } from '../db/delete-in-chunks.ts'
import { runRetentionPurge } from '../coordination/retention-run.ts'
import { purgeOutbox } from '../reports/outbox-retention.ts'
import { accessProblem } from '../utils/access-problem.ts'

const DAY_MS = 86_400_000

export interface HistoryPurgeResult {
  /** The read model's conversations (`conversations`). */
  conversations: number
  /** Calls switchboard placed or scheduled (`calls`). */
  calls: number
  /** Reports and other mail sent or given up on (`mail_log`). */
  mail: number
  /** Messages written to this replica's `$DATA_DIR/outbox` (without SMTP_URL). */
  outboxFiles: number
  skipped: boolean
}

/**
 * Purges call history older than HISTORY_RETENTION_DAYS (off, 0, by default: kept for good): conversations that
 * ended before the window (or, never ended, were last updated before it), calls placed or scheduled before it (a
 * call still queued or awaiting its answer, or scheduled for a time inside the window, stays), and mail created
 * before it that is no longer waiting to go. Reports, the dashboard and follow-up planning read only this history, so a day past the window
 * reports as empty; the window is at least 40 days, past the report's 30-day trend and the follow-up planner's
 * reading of a contact's calls (30 days before the 7 it follows up by default). One replica at a time (a lease),
 * in paced chunks (src/db/delete-in-chunks.ts) through the tables' time indexes. The mail the outbox wrote as files
 * before the window goes with its rows (src/reports/outbox-retention.ts), on every replica.
 */
export async function purgeCallHistory(rt: Runtime, options: DeleteInChunksOptions = {}): Promise<HistoryPurgeResult> {
  const days = rt.config.history.retentionDays
  const none = { conversations: 0, calls: 0, mail: 0 }
  if (days <= 0) return { ...none, outboxFiles: 0, skipped: true }
  const cutoff = () => rt.clock.now() - days * DAY_MS
  // The outbox's files first, outside the lease: each replica's are in its own DATA_DIR, which no other one reaches.
  // A folder it cannot list or clear (another user's, a file in its place) is logged and left for the next round: it
  // must not cost the database's purge, which it did when it threw before it.
  let outboxFiles = 0
  try {
    outboxFiles = await purgeOutbox(rt.config.dataDir, cutoff())
    if (outboxFiles > 0) rt.log.info({ files: outboxFiles }, 'removed old mail from the outbox folder (HISTORY_RETENTION_DAYS)')
  } catch (error) {
    rt.log.warn({ err: accessProblem(error) ?? (error as Error).message }, 'old mail in the outbox folder was not removed (HISTORY_RETENTION_DAYS); the call history is purged all the same')
  }
  const rows = await runRetentionPurge(rt, 'history', 'call history', none, options, async ({ cutoff, chunks, counted }) => {
    const db = rt.store.db
    /** Rows `deleteChunk` deletes, chunk by chunk, paced as the other purges. */
    const purged = async (deleteChunk: (limit: number) => Promise<{ numDeletedRows: bigint }>) =>
      counted(await deleteInChunks(async (limit) => Number((await deleteChunk(limit)).numDeletedRows), chunks))
    const ended = await purged((limit) =>
      db.deleteFrom('conversations').where('conversation_id', 'in', db.selectFrom('conversations').select('conversation_id').where('ended_at', '<', cutoff).limit(limit)).executeTakeFirst(),
    )
    // Conversations that never ended (their last event lost, the provider never reported the end): by their last update.
    const abandoned = await purged((limit) =>
      db
        .deleteFrom('conversations')
        .where('conversation_id', 'in', db.selectFrom('conversations').select('conversation_id').where('ended_at', 'is', null).where('updated_at', '<', cutoff).limit(limit))
        .executeTakeFirst(),
    )
    const calls = await purged((limit) =>
      db
        .deleteFrom('calls')
        .where(
          'id',
          'in',
          db
            .selectFrom('calls')
            .select('id')
            .where('created_at', '<', cutoff)
            // Waiting in the paced queue, or sent with no answer yet: its ledger row is still to be settled.
            .where('status', 'not in', ['queued', 'pending'])
            .where((eb) => eb.or([eb('scheduled_for', 'is', null), eb('scheduled_for', '<', cutoff)]))
            .limit(limit),
        )
        .executeTakeFirst(),
    )
    const mail = await purged((limit) =>
      db.deleteFrom('mail_log').where('id', 'in', db.selectFrom('mail_log').select('id').where('created_at', '<', cutoff).where('status', '!=', 'queued').limit(limit)).executeTakeFirst(),
    )
    const conversations = ended + abandoned
    return { counts: { conversations, calls, mail }, tables: { conversations, calls, mail_log: mail } }
  }, cutoff)
  return { ...rows, outboxFiles }
}
