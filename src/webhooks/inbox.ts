import type { Insertable, Transaction } from 'kysely'
import type { Database, WebhookEventsTable } from '../db/schema.ts'
import type { Store } from '../db/connect.ts'
import { startSqliteWriter, type CompiledStatement, type SqliteWriter } from './sqlite-writer.ts'

export type InboxRow = Insertable<WebhookEventsTable>

/** The identifying fields of a new event; `pendingRow` adds the state every new event starts in. */
export type NewEvent = Pick<InboxRow, 'event_id' | 'target' | 'event_type' | 'conversation_id' | 'trace_id' | 'agent_id' | 'body' | 'headers' | 'source'>

/** A row for an event just received (or synthesized): pending, due now, never attempted. */
export function pendingRow(event: NewEvent, now: number): InboxRow {
  return {
    ...event,
    received_at: now,
    status: 'pending',
    attempts: 0,
    next_attempt_at: now,
    claimed_by: null,
    claimed_until: null,
    last_error: null,
    processed_at: null,
  }
}

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
  /** Flushes, then stops the writer thread (SQLite). */
  close(): Promise<void>
}

interface RejectionRow {
  bucket_at: number
  target: string
  reason: string
  count: number
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
  let rejections = new Map<string, RejectionRow>()
  const file = store.dialect === 'sqlite' ? store.sqlite?.name : undefined
  const writer = file && file !== ':memory:' && !store.sqlite?.memory ? startSqliteWriter(file) : undefined
  let running: Promise<void> | undefined
  let scheduled = false
  const listeners = new Set<() => void>()

  /** Splits a batch into first copies (to insert) and copies already known to repeat within it. */
  function plan(batch: Waiter[]): { firsts: InboxRow[]; repeats: Map<string, number> } {
    const firsts: InboxRow[] = []
    const repeats = new Map<string, number>()
    const seen = new Set<string>()
    for (const w of batch) {
      if (seen.has(w.row.event_id)) repeats.set(w.row.event_id, (repeats.get(w.row.event_id) ?? 0) + 1)
      else {
        seen.add(w.row.event_id)
        firsts.push(w.row)
      }
    }
    return { firsts, repeats }
  }

  const insertQuery = (db: Store['db'] | Transaction<Database>, firsts: InboxRow[]) =>
    db.insertInto('webhook_events').values(firsts).onConflict((oc) => oc.column('event_id').doNothing()).returning('event_id')
  const duplicateQuery = (db: Store['db'] | Transaction<Database>, eventId: string, n: number) =>
    db.updateTable('webhook_events').set((eb) => ({ duplicates: eb('duplicates', '+', n) })).where('event_id', '=', eventId)
  const rejectionQuery = (db: Store['db'] | Transaction<Database>, r: RejectionRow) =>
    db
      .insertInto('webhook_rejections')
      .values(r)
      .onConflict((oc) => oc.columns(['bucket_at', 'target', 'reason']).doUpdateSet((eb) => ({ count: eb('webhook_rejections.count', '+', eb.ref('excluded.count')) })))

  // The writer binds (count, event_id) in this order; checked once here rather than assumed.
  const probe = duplicateQuery(store.db, '?id', 7).compile()
  if (probe.parameters[0] !== 7 || probe.parameters[1] !== '?id') throw new Error('unexpected parameter order in the duplicates update')
  const duplicateSql = probe.sql

  /** Postgres (and in-memory SQLite): one kysely transaction. Returns the ids actually inserted. */
  async function writeWithTransaction(batch: Waiter[], stats: Map<string, RejectionRow>): Promise<Set<string>> {
    return store.db.transaction().execute(async (trx) => {
      const { firsts, repeats } = plan(batch)
      const stored = new Set(firsts.length > 0 ? (await insertQuery(trx, firsts).execute()).map((r) => r.event_id) : [])
      for (const row of firsts) if (!stored.has(row.event_id)) repeats.set(row.event_id, (repeats.get(row.event_id) ?? 0) + 1)
      for (const [eventId, n] of repeats) await duplicateQuery(trx, eventId, n).execute()
      for (const r of stats.values()) await rejectionQuery(trx, r).execute()
      return stored
    })
  }

  /** SQLite file: the same statements, compiled here, committed on the writer thread. */
  async function writeWithThread(w: SqliteWriter, batch: Waiter[], stats: Map<string, RejectionRow>): Promise<Set<string>> {
    const { firsts, repeats } = plan(batch)
    const compiled = (q: { compile(): { sql: string; parameters: readonly unknown[] } }): CompiledStatement => {
      const c = q.compile()
      return { sql: c.sql, parameters: c.parameters }
    }
    const inserted = await w.write({
      insert: firsts.length > 0 ? compiled(insertQuery(store.db, firsts)) : undefined,
      duplicateSql: duplicateSql,
      offered: firsts.map((r) => r.event_id),
      repeats: [...repeats],
      extra: [...stats.values()].map((r) => compiled(rejectionQuery(store.db, r))),
    })
    return new Set(inserted)
  }

  async function drain(): Promise<void> {
    while (queue.length > 0 || rejections.size > 0) {
      const batch = queue.slice(0, MAX_BATCH)
      queue = queue.slice(batch.length)
      const stats = rejections
      rejections = new Map()
      let stored: Set<string>
      try {
        stored = writer ? await writeWithThread(writer, batch, stats) : await writeWithTransaction(batch, stats)
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
        const isNew = first && stored.has(w.row.event_id)
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

  async function flush(): Promise<void> {
    for (let i = 0; i < 1000 && (running || scheduled || queue.length > 0); i++) {
      if (running) await running.catch(() => {})
      else await new Promise<void>((resolve) => setImmediate(resolve))
    }
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
    flush,
    async close() {
      await flush()
      await writer?.close()
    },
  }
}
