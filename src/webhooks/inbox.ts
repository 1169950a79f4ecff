import { sql, type Insertable, type Transaction } from 'kysely'
import type { Database, WebhookEventsTable } from '../db/schema.ts'
import type { Store } from '../db/connect.ts'
import { startSqliteWriter, type CompiledStatement, type SqliteWriter } from './sqlite-writer.ts'
import { classifyStorageError, isRetryableConflict } from './storage-errors.ts'
import type { Clock } from '../utils/clock.ts'
import { nextTurn } from '../utils/next-turn.ts'

export type InboxRow = Insertable<WebhookEventsTable>

/** The identifying fields of a new event; `pendingRow` adds the state every new event starts in. */
export type NewEvent = Pick<InboxRow, 'event_id' | 'target' | 'event_type' | 'conversation_id' | 'trace_id' | 'agent_id' | 'body' | 'headers' | 'source'>

/** The state every new event starts in: pending, due now, never attempted. */
interface NewEventState {
  received_at: number
  status: 'pending'
  attempts: 0
  next_attempt_at: number
  claimed_by: null
  claimed_until: null
  last_error: null
  processed_at: null
}

/**
 * A row for an event just received (or synthesized). Written out field by field, not `{ ...event, … }`: V8
 * (Node 20) builds an object spread followed by eight more properties about twenty times slower than this
 * literal — on the receiver's hot path that was 20–30 µs of every request. ROW_COLUMNS below checks the
 * result against the table's columns.
 */
export function pendingRow(event: NewEvent, now: number): NewEvent & NewEventState {
  return {
    event_id: event.event_id,
    target: event.target,
    event_type: event.event_type,
    conversation_id: event.conversation_id,
    trace_id: event.trace_id,
    agent_id: event.agent_id,
    body: event.body,
    headers: event.headers,
    source: event.source,
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

export type PendingRow = ReturnType<typeof pendingRow>

/**
 * Every column a new event row sets, in the order the SQLite writer binds them (`satisfies` makes the
 * compiler check the list against `pendingRow`: none missing, none extra).
 */
const ROW_COLUMNS = Object.keys({
  event_id: 1, target: 1, event_type: 1, conversation_id: 1, trace_id: 1, agent_id: 1, body: 1, headers: 1, source: 1,
  received_at: 1, status: 1, attempts: 1, next_attempt_at: 1, claimed_by: 1, claimed_until: 1, last_error: 1, processed_at: 1,
} satisfies Record<keyof PendingRow, 1>) as Array<keyof PendingRow>

export interface CommitResult {
  duplicate: boolean
}

/** Storage could not commit; the receiver answers 503 + Retry-After. `full`: out of disk space. */
export class StorageUnavailableError extends Error {
  override readonly name = 'StorageUnavailableError'
  constructor(
    message: string,
    readonly reason: 'unavailable' | 'full' = 'unavailable',
    options?: ErrorOptions,
  ) {
    super(message, options)
  }
}

/** The database refused this one event (alone, in its own transaction): bad input, answered 400. */
export class EventRefusedError extends Error {
  override readonly name = 'EventRefusedError'
}

/**
 * The longest a delivery waits for its commit (the runtime's inbox is created with it: src/webhooks/state.ts).
 * The provider gives up after 10 s and counts that as a failure; answering 503 first tells it to retry. A
 * commit that still lands after the deadline makes the retry a duplicate (204), never a loss.
 */
export const COMMIT_DEADLINE_MS = 5_000
/**
 * How long (Postgres) an inbox commit waits for a row another transaction holds before its batch is split: far above
 * two replicas' commits of the same redelivered id meeting (milliseconds), far below COMMIT_DEADLINE_MS.
 */
export const INBOX_LOCK_TIMEOUT_MS = 1_000

/** No commit within the inbox's deadline (a stuck disk or database); the receiver answers 503. */
export class CommitDeadlineError extends Error {
  override readonly name = 'CommitDeadlineError'
}

/**
 * The durable inbox with group commit: every insert that arrives while the previous commit is running
 * (or within the same tick) joins one transaction, and each caller's promise settles only after that
 * transaction committed. Dedupe is the primary key: insert-or-ignore, so of concurrent copies exactly
 * one is stored; the others bump its `duplicates` counter. Rejection counts ride along in the same
 * transaction (they are statistics, so they are also flushed on their own when no event is pending).
 */
export interface Inbox {
  commit(row: PendingRow): Promise<CommitResult>
  /** Counts a rejected delivery in its per-minute bucket (buffered; flushed with the next commit). */
  countRejection(target: string, reason: string, atMs: number): void
  /** Called after each successful commit that stored at least one new event, with the deliveries it committed. */
  onCommitted(fn: (deliveries: number) => void): () => void
  /**
   * Called with `true` when a batch of deliveries starts being written and `false` once it is done (committed or
   * not), after any `onCommitted` call for it: a slow commit (a slow disk's fsync) is deliveries still arriving.
   */
  onWriting(fn: (writing: boolean) => void): () => void
  /** Waits for everything queued so far to be committed. */
  flush(): Promise<void>
  /** Flushes, then stops the writer thread (SQLite). */
  close(): Promise<void>
  /**
   * Runs a PRAGMA on every connection the inbox writes with (the writer thread's and the store's own,
   * SQLite only): per-connection settings such as `max_page_count` (a cap on the database's size).
   */
  sqlitePragma(statement: string): Promise<void>
}

interface RejectionRow {
  bucket_at: number
  target: string
  reason: string
  count: number
}

interface Waiter {
  row: PendingRow
  /** When it was queued, on the deadline's clock. */
  at: number
  settled: boolean
  resolve(result: CommitResult): void
  reject(error: Error): void
}

/** One order for every writer's rows: only its consistency across writers matters, not which order it is. */
const byKey = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/** Rows per transaction; keeps a multi-row insert well under SQLite's variable limit. */
const MAX_BATCH = 400

export interface InboxOptions {
  /** Told the size of each group commit's batch (deliveries, duplicates included) as it is written. */
  onBatch?(size: number): void
  /**
   * A commit that has not happened `ms` after the event was queued fails with CommitDeadlineError (the
   * commit itself goes on: if it lands later, a retry of the event is its duplicate). One timer for the whole
   * inbox, armed for the oldest event still waiting — not a timer per event.
   */
  deadline?: { clock: Clock; ms: number }
}

export function createInbox(store: Store, options: InboxOptions = {}): Inbox {
  let queue: Waiter[] = []
  let rejections = new Map<string, RejectionRow>()
  const file = store.dialect === 'sqlite' ? store.sqlite?.name : undefined
  const writer = file && file !== ':memory:' && !store.sqlite?.memory ? startSqliteWriter(file, { clock: options.deadline?.clock, ...(store.sqliteFile?.path === file ? { opened: store.sqliteFile.opened } : {}) }) : undefined
  let running: Promise<void> | undefined
  let scheduled = false
  const listeners = new Set<(deliveries: number) => void>()
  const writingListeners = new Set<(writing: boolean) => void>()
  /** The batch being written (its waiters settle when it commits, or at the deadline). */
  let inflight: Waiter[] = []
  let cancelDeadline: (() => void) | undefined
  let closed = false

  /** Fails the waiters past the deadline, then arms the timer for the oldest one still waiting. */
  function checkDeadline(): void {
    cancelDeadline = undefined
    const deadline = options.deadline
    if (!deadline || closed) return
    const now = deadline.clock.now()
    let oldest: Waiter | undefined
    for (const list of [inflight, queue]) {
      for (const w of list) {
        if (w.settled) continue
        if (now - w.at >= deadline.ms) {
          w.settled = true
          w.reject(new CommitDeadlineError(`no commit within ${deadline.ms} ms`))
        } else if (!oldest) oldest = w
      }
    }
    if (oldest) cancelDeadline = deadline.clock.setTimeout(checkDeadline, oldest.at + deadline.ms - now)
  }

  /** Splits a batch into first copies (to insert) and copies already known to repeat within it. */
  function plan(batch: Waiter[]): { firsts: PendingRow[]; repeats: Map<string, number> } {
    const firsts: PendingRow[] = []
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

  const insertQuery = (db: Store['db'] | Transaction<Database>, firsts: PendingRow[]) =>
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
  // The single-row insert the writer prepares once; its parameters must come out in ROW_COLUMNS order.
  const sampleRow = Object.fromEntries(ROW_COLUMNS.map((c) => [c, `?${c}`])) as unknown as PendingRow
  const insertProbe = store.db.insertInto('webhook_events').values(sampleRow).onConflict((oc) => oc.column('event_id').doNothing()).compile()
  if (insertProbe.parameters.join(',') !== ROW_COLUMNS.map((c) => `?${c}`).join(',')) throw new Error('unexpected parameter order in the inbox insert')
  const insertSql = insertProbe.sql

  /**
   * Postgres (and in-memory SQLite): one kysely transaction. Returns the ids actually inserted. Rows are
   * written in key order, so two replicas committing batches that share event ids (the provider's retries
   * reach either) wait for each other instead of deadlocking; a deadlock or serialization failure that
   * still happens is run again, since Postgres rolled the whole transaction back.
   */
  async function writeWithTransaction(batch: Waiter[], stats: Map<string, RejectionRow>): Promise<Set<string>> {
    const { firsts, repeats } = plan(batch)
    firsts.sort((a, b) => byKey(a.event_id, b.event_id))
    const rejectionRows = [...stats.entries()].sort(([a], [b]) => byKey(a, b)).map(([, r]) => r)
    for (let attempt = 1; ; attempt++) {
      try {
        return await store.db.transaction().execute(async (trx) => {
          // A row held by another transaction (a stalled replica's commit, a session left open on it) must not hold
          // every delivery behind it until the statement timeout: past this the batch is split, and only the event
          // whose row is held waits for the provider's retry.
          if (store.dialect === 'postgres') await sql`set local lock_timeout = ${sql.lit(`${INBOX_LOCK_TIMEOUT_MS}ms`)}`.execute(trx)
          const stored = new Set(firsts.length > 0 ? (await insertQuery(trx, firsts).execute()).map((r) => r.event_id) : [])
          const duplicates = new Map(repeats)
          for (const row of firsts) if (!stored.has(row.event_id)) duplicates.set(row.event_id, (duplicates.get(row.event_id) ?? 0) + 1)
          for (const eventId of [...duplicates.keys()].sort(byKey)) await duplicateQuery(trx, eventId, duplicates.get(eventId)!).execute()
          for (const r of rejectionRows) await rejectionQuery(trx, r).execute()
          return stored
        })
      } catch (error) {
        if (attempt >= 3 || !isRetryableConflict(error)) throw error
      }
    }
  }

  /** SQLite file: the same statements, compiled here, committed on the writer thread. */
  async function writeWithThread(w: SqliteWriter, batch: Waiter[], stats: Map<string, RejectionRow>): Promise<Set<string>> {
    const { firsts, repeats } = plan(batch)
    const compiled = (q: { compile(): { sql: string; parameters: readonly unknown[] } }): CompiledStatement => {
      const c = q.compile()
      return { sql: c.sql, parameters: c.parameters }
    }
    const inserted = await w.write({
      insertSql,
      rows: firsts.map((row) => ROW_COLUMNS.map((c) => row[c])),
      duplicateSql,
      repeats: [...repeats],
      extra: [...stats.values()].map((r) => compiled(rejectionQuery(store.db, r))),
    })
    return new Set(inserted)
  }

  const write = (batch: Waiter[], stats: Map<string, RejectionRow>) => (writer ? writeWithThread(writer, batch, stats) : writeWithTransaction(batch, stats))

  /** Settles each waiter of a committed batch: the first copy of a stored id is new, the rest duplicates. */
  function settle(batch: Waiter[], stored: Set<string>): boolean {
    const seen = new Set<string>()
    let storedAny = false
    for (const w of batch) {
      const first = !seen.has(w.row.event_id)
      seen.add(w.row.event_id)
      const isNew = first && stored.has(w.row.event_id)
      if (isNew) storedAny = true
      w.settled = true
      w.resolve({ duplicate: !isNew })
    }
    return storedAny
  }

  const unavailable = (error: unknown): StorageUnavailableError => {
    const reason = classifyStorageError(error) === 'full' ? 'full' : 'unavailable'
    const what = reason === 'full' ? 'storage is full' : 'storage could not commit'
    return new StorageUnavailableError(`${what}: ${(error as Error).message}`, reason, { cause: error })
  }

  /**
   * A batch the database refused for its rows (not for being down): one bad event must not fail the
   * others, so each is committed alone. The refused ones get EventRefusedError (400); if the database
   * goes away meanwhile, the rest get 503 as usual. Rejection counters are statistics: tried once more.
   */
  async function commitOneByOne(batch: Waiter[], stats: Map<string, RejectionRow>): Promise<boolean> {
    let storedAny = false
    const byId = new Map<string, Waiter[]>()
    for (const w of batch) byId.set(w.row.event_id, [...(byId.get(w.row.event_id) ?? []), w])
    for (const copies of byId.values()) {
      try {
        if (settle(copies, await write(copies, new Map()))) storedAny = true
      } catch (error) {
        const failure =
          classifyStorageError(error) === 'refused'
            ? new EventRefusedError(`the database refused this event: ${(error as Error).message}`, { cause: error })
            : unavailable(error)
        for (const w of copies) {
          w.settled = true
          w.reject(failure)
        }
      }
    }
    if (stats.size > 0) await write([], stats).catch(() => {})
    return storedAny
  }

  async function drain(): Promise<void> {
    while (queue.length > 0 || rejections.size > 0) {
      const batch = queue.slice(0, MAX_BATCH)
      queue = queue.slice(batch.length)
      inflight = batch
      const stats = rejections
      rejections = new Map()
      const announced = batch.length > 0
      if (announced) {
        options.onBatch?.(batch.length)
        for (const fn of writingListeners) fn(true)
      }
      try {
        let storedAny: boolean
        try {
          storedAny = settle(batch, await write(batch, stats))
        } catch (error) {
          const kind = classifyStorageError(error)
          if ((kind === 'refused' || kind === 'contended') && batch.length > 0) storedAny = await commitOneByOne(batch, stats)
          else {
            const failure = unavailable(error)
            for (const w of batch) {
              w.settled = true
              w.reject(failure)
            }
            continue
          }
        }
        if (storedAny) for (const fn of listeners) fn(batch.length)
      } finally {
        if (announced) for (const fn of writingListeners) fn(false)
      }
    }
    inflight = []
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
      else await nextTurn()
    }
  }

  return {
    commit(row) {
      return new Promise<CommitResult>((resolve, reject) => {
        const deadline = options.deadline
        queue.push({ row, at: deadline ? deadline.clock.now() : 0, settled: false, resolve, reject })
        if (deadline && !cancelDeadline) cancelDeadline = deadline.clock.setTimeout(checkDeadline, deadline.ms)
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
    onWriting(fn) {
      writingListeners.add(fn)
      return () => writingListeners.delete(fn)
    },
    flush,
    async close() {
      await flush()
      closed = true
      cancelDeadline?.()
      await writer?.close()
    },
    async sqlitePragma(statement) {
      store.sqlite?.pragma(statement)
      await writer?.pragma(statement)
    },
  }
}
