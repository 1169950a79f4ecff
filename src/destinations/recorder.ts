import type { Runtime } from '../runtime.ts'
import { recordAttempts, type AttemptRecord } from './outbox.ts'
import { classifyStorageError } from '../webhooks/storage-errors.ts'

/**
 * Group commit of attempt outcomes, shared by every destination lane of a worker: outcomes that land
 * while a commit runs go into the next one, so the commit rate (one fsync each on SQLite) stays flat as
 * deliveries per second grow.
 */
export interface AttemptRecorder {
  push(record: AttemptRecord): void
  busy(): boolean
  /** Resolves when everything pushed so far is committed (or given up on). */
  settle(): Promise<void>
}

/**
 * How long outcomes gather before their commit. better-sqlite3 commits synchronously, so no answer lands while
 * a commit runs: committing at the next turn of the event loop carried ~30 outcomes at full speed, and every
 * commit rewrites the same index and table pages into the log. A few milliseconds make it a few hundred: at 5 ms
 * a drain of 17,000–20,000 deliveries a second committed ~85 at a time, at 20 ms up to GATHER_MAX — five
 * alternated pairs of `npm run bench -- forwarding`, 16,472–19,189 deliveries/s against 17,823–20,399. The cost:
 * with ordering on, a conversation's next delivery waits up to this long for the previous outcome (≤ 50 a second
 * per conversation), and a crash re-sends up to this long's worth of answered deliveries (at least once).
 */
const GATHER_MS = 20
/** A commit starts at once when this many outcomes wait. */
const GATHER_MAX = 256

export function createAttemptRecorder(rt: Runtime, owner: string, onCommitted: () => void): AttemptRecorder {
  const pending: AttemptRecord[] = []
  let flushing: Promise<void> | undefined
  let gathered: (() => void) | undefined

  function gather(): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, GATHER_MS)
      gathered = () => {
        clearTimeout(timer)
        resolve()
      }
    })
  }

  /**
   * Commits a batch. An outcome not committed is lost (its claim lapses and the delivery goes out again, at least
   * once), and every destination's outcomes share the commit: so a failed commit is tried again, then row by row,
   * and one row the database refuses (a sink's answer it cannot store) cannot take the others with it.
   */
  async function commit(batch: AttemptRecord[]): Promise<void> {
    let error: unknown
    // Twice, unless the database refused a row's data (that would fail again): a lost connection is replaced by
    // the second try, a deadlock with another replica's transaction has passed.
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await recordAttempts(rt, owner, batch)
        return
      } catch (failed) {
        error = failed
        if (classifyStorageError(failed) === 'refused') break
      }
    }
    if (classifyStorageError(error) !== 'refused') {
      // The database is away (or full): row by row would only fail slower.
      rt.log.error({ deliveries: batch.length, err: (error as Error).message }, 'could not record delivery outcomes')
      return
    }
    if (batch.length === 1) return unrecorded(batch[0]!, error)
    for (const [i, record] of batch.entries()) {
      try {
        await recordAttempts(rt, owner, [record])
      } catch (failed) {
        unrecorded(record, failed)
        if (classifyStorageError(failed) === 'refused') continue
        // The database went away meanwhile: the rest wait for their claims to lapse too.
        if (i + 1 < batch.length) rt.log.error({ deliveries: batch.length - i - 1, err: (failed as Error).message }, 'could not record delivery outcomes')
        return
      }
    }
  }

  function unrecorded(record: AttemptRecord, error: unknown): void {
    const row = record.row
    rt.log.error(
      { delivery_id: row.id, event_id: row.event_id, attempt: row.attempts + 1, result: record.result, err: (error as Error).message },
      'could not record a delivery outcome; its claim lapses and it is sent again',
    )
  }

  function flush(): void {
    if (flushing) return
    flushing = (async () => {
      // Let the answers on the wire land first (GATHER_MS), unless enough are already waiting.
      if (pending.length < GATHER_MAX) await gather()
      gathered = undefined
      while (pending.length > 0) {
        await commit(pending.splice(0))
      }
    })().finally(() => {
      flushing = undefined
      // Recorded outcomes free claims and unblock the next delivery of an ordered conversation.
      onCommitted()
      // An outcome pushed after the loop's last look but before this ran found a flush still going and left it to
      // this one: it goes now rather than wait for the next outcome (perhaps none, and its claim would lapse).
      if (pending.length > 0) flush()
    })
  }

  return {
    push(record) {
      pending.push(record)
      if (pending.length >= GATHER_MAX) gathered?.()
      flush()
    },
    busy: () => pending.length > 0 || Boolean(flushing),
    async settle() {
      for (let i = 0; i < 100 && (flushing || pending.length); i++) {
        if (!flushing) flush()
        await flushing
      }
    },
  }
}
