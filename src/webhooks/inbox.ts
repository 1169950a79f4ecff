import type { Insertable, Transaction } from 'kysely'
import type { Database, WebhookEventsTable } from '../db/schema.ts'
import type { Store } from '../db/connect.ts'

export type InboxRow = Insertable<WebhookEventsTable>

export interface CommitResult {
  duplicate: boolean
}

/** Storage could not commit; the receiver answers 503 + Retry-After. */
export class StorageUnavailableError extends Error {
  override readonly name = 'StorageUnavailableError'
}

/**
 * The durable inbox with group commit: every insert that arrives while the previous commit is running
 * (or within the same tick) joins one transaction, and each caller's promise settles only after that
 * transaction committed. Dedupe is the primary key: insert-or-ignore, so of concurrent copies exactly
 * one is stored; the others bump its `duplicates` counter. Rejection counts ride along in the same
 * transaction (they are statistics, so they are also flushed on their own when no event is pending).
 */
export interface Inbox {
  commit(row: InboxRow): Promise<CommitResult>
  /** Counts a rejected delivery in its per-minute bucket (buffered; flushed with the next commit). */
  countRejection(target: string, reason: string, atMs: number): void
  /** Called after each successful commit that stored at least one new event. */
  onCommitted(fn: () => void): () => void
  /** Waits for everything queued so far to be committed. */
  flush(): Promise<void>
}

interface Waiter {
  row: InboxRow
  resolve(result: CommitResult): void
  reject(error: Error): void
}

/** Rows per transaction; keeps a multi-row insert well under SQLite's variable limit. */
const MAX_BATCH = 400

export function createInbox(store: Store): Inbox {
  let queue: Waiter[] = []
  let rejections = new Map<string, { bucket_at: number; target: string; reason: string; count: number }>()
  let running: Promise<void> | undefined
  let scheduled = false
  const listeners = new Set<() => void>()

  async function write(trx: Transaction<Database>, batch: Waiter[], stats: typeof rejections): Promise<Map<string, boolean>> {
    const outcome = new Map<string, boolean>()
    const firsts: InboxRow[] = []
    const repeats = new Map<string, number>()
    for (const w of batch) {
      if (outcome.has(w.row.event_id)) {
        repeats.set(w.row.event_id, (repeats.get(w.row.event_id) ?? 0) + 1)
        continue
      }
      outcome.set(w.row.event_id, false)
      firsts.push(w.row)
    }
    if (firsts.length > 0) {
      const inserted = await trx
        .insertInto('webhook_events')
        .values(firsts)
        .onConflict((oc) => oc.column('event_id').doNothing())
        .returning('event_id')
        .execute()
      const stored = new Set(inserted.map((r) => r.event_id))
      for (const row of firsts) {
        if (stored.has(row.event_id)) outcome.set(row.event_id, true)
        else repeats.set(row.event_id, (repeats.get(row.event_id) ?? 0) + 1)
      }
    }
    for (const [eventId, n] of repeats) {
      await trx
        .updateTable('webhook_events')
        .set((eb) => ({ duplicates: eb('duplicates', '+', n) }))
        .where('event_id', '=', eventId)
        .execute()
    }
    for (const r of stats.values()) {
      await trx
        .insertInto('webhook_rejections')
        .values(r)
        .onConflict((oc) => oc.columns(['bucket_at', 'target', 'reason']).doUpdateSet((eb) => ({ count: eb('webhook_rejections.count', '+', eb.ref('excluded.count')) })))
        .execute()
    }
    return outcome
  }

  async function drain(): Promise<void> {
    while (queue.length > 0 || rejections.size > 0) {
      const batch = queue.slice(0, MAX_BATCH)
      queue = queue.slice(batch.length)
      const stats = rejections
      rejections = new Map()
      let outcome: Map<string, boolean>
      try {
        outcome = await store.db.transaction().execute((trx) => write(trx, batch, stats))
      } catch (error) {
        const failure = new StorageUnavailableError(`storage could not commit: ${(error as Error).message}`, { cause: error })
        for (const w of batch) w.reject(failure)
        continue
      }
      // Within a batch the first copy of an id is the stored one; later copies are duplicates.
      const seen = new Set<string>()
      let storedAny = false
      for (const w of batch) {
        const first = !seen.has(w.row.event_id)
        seen.add(w.row.event_id)
        const isNew = first && outcome.get(w.row.event_id) === true
        if (isNew) storedAny = true
        w.resolve({ duplicate: !isNew })
      }
      if (storedAny) for (const fn of listeners) fn()
    }
  }

  function schedule(): void {
    if (scheduled || running) return
    scheduled = true
    // One tick: requests that arrive together share the transaction (and its fsync).
    setImmediate(() => {
      scheduled = false
      running = drain().finally(() => {
        running = undefined
        if (queue.length > 0 || rejections.size > 0) schedule()
      })
    })
  }

  return {
    commit(row) {
      return new Promise<CommitResult>((resolve, reject) => {
        queue.push({ row, resolve, reject })
        schedule()
      })
    },
    countRejection(target, reason, atMs) {
      const bucket = atMs - (atMs % 60_000)
      const key = `${bucket}|${target}|${reason}`
      const known = rejections.get(key)
      if (known) known.count++
      else rejections.set(key, { bucket_at: bucket, target, reason, count: 1 })
      schedule()
    },
    onCommitted(fn) {
      listeners.add(fn)
      return () => listeners.delete(fn)
    },
    async flush() {
      for (let i = 0; i < 1000 && (running || scheduled || queue.length > 0); i++) {
        if (running) await running.catch(() => {})
        else await new Promise<void>((resolve) => setImmediate(resolve))
      }
    },
  }
}
