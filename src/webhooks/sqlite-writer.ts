import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import { BACKSTOP_CHECKPOINT_PAGES, WAL_SIZE_LIMIT_BYTES } from '../db/connect.ts'
import { closeWorker } from '../utils/close-worker.ts'
import { fileIdentity, replacedFileMessage, type FileIdentity } from '../db/file-identity.ts'
import { systemClock, type Clock } from '../utils/clock.ts'

/**
 * A dedicated thread with its own connection to the SQLite file, for the inbox's commits. better-sqlite3
 * is synchronous: on the main thread every `synchronous=FULL` commit would stop the event loop for the
 * fsync, and requests arriving meanwhile could not even be read. On this thread the fsync overlaps with
 * request handling, and the next group commit fills up while the previous one syncs.
 *
 * The SQL is compiled by kysely on the main thread (typed schema, same queries as on Postgres); this
 * thread only binds and runs it, inside one BEGIN IMMEDIATE transaction per batch. New events arrive as
 * rows of values for one prepared single-row INSERT: the statement is prepared once, whatever the batch
 * size (a multi-row INSERT is a new statement to compile for every size).
 */

export interface CompiledStatement {
  sql: string
  parameters: readonly unknown[]
}

export interface WriterBatch {
  /** Single-row INSERT … ON CONFLICT (event_id) DO NOTHING, bound once per row. */
  insertSql: string
  /** The rows to insert, each its values in the statement's order, the event id first. */
  rows: unknown[][]
  /** UPDATE … SET duplicates = duplicates + ? WHERE event_id = ? (bound per id). */
  duplicateSql: string
  /** Copies within the batch itself, already known to be duplicates. */
  repeats: Array<[string, number]>
  /** Statements that do not depend on the insert's outcome (rejection counters). */
  extra: CompiledStatement[]
}

export interface SqliteWriter {
  /** Runs one batch in one transaction; resolves with the ids actually inserted, after the commit. */
  write(batch: WriterBatch): Promise<string[]>
  /**
   * Runs a PRAGMA on the writer's own connection (per-connection settings such as `max_page_count`,
   * which caps the database's size and makes SQLite fail writes with SQLITE_FULL, as a full disk does).
   */
  pragma(statement: string): Promise<unknown>
  close(): Promise<void>
}

// Plain CommonJS, evaluated in the worker: no TypeScript loader needed there.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.driver)
const db = new Database(workerData.file)
db.pragma('journal_mode = WAL')
db.pragma('synchronous = FULL')
// Checkpoints are left to the service's checkpoint thread (src/db/checkpointer.ts; BACKSTOP_CHECKPOINT_PAGES in
// src/db/connect.ts): run here, at SQLite's default of every 1,000 pages, one held up a group commit (and every
// provider request waiting on it) for 5-15 ms every ~4 MB of log. Measured on two cores (the pipeline benchmark,
// five alternating runs each): p99 while the backlog drains 8.6-18 ms against 10.5-36 ms; commits over 5 ms
// 6-15 a run against 22-39.
db.pragma('wal_autocheckpoint = ' + workerData.autocheckpointPages)
// The log is cut back to this size when it starts over (WAL_SIZE_LIMIT_BYTES in src/db/connect.ts).
db.pragma('journal_size_limit = ' + workerData.walSizeLimit)
// Lock waits are polled here rather than left to SQLite's busy handler, whose sleeps grow to 100 ms: against
// the processing thread's stream of short write transactions it kept missing the gaps between them, and a
// 2 ms commit could wait a second or more. Polling every 0.1 ms (1 ms after the first 50) takes the first gap.
db.pragma('busy_timeout = 0')
const BUSY_LIMIT_MS = 5000
const nap = new Int32Array(new SharedArrayBuffer(4))
const whenFree = (fn) => (arg) => {
  const started = performance.now()
  for (;;) {
    try {
      return fn(arg)
    } catch (error) {
      const waited = performance.now() - started
      if (!error || error.code !== 'SQLITE_BUSY' || waited >= BUSY_LIMIT_MS) throw error
      Atomics.wait(nap, 0, 0, waited < 50 ? 0.1 : 1)
    }
  }
}
const cache = new Map()
const prepare = (sql) => {
  let stmt = cache.get(sql)
  if (!stmt) {
    if (cache.size > 64) cache.clear()
    stmt = db.prepare(sql)
    cache.set(sql, stmt)
  }
  return stmt
}
const transaction = db.transaction((batch) => {
  const inserted = []
  const dups = new Map(batch.repeats)
  if (batch.rows.length > 0) {
    const insert = prepare(batch.insertSql)
    for (const row of batch.rows) {
      // No change: the id was stored before (by an earlier batch or another process) — a duplicate.
      if (insert.run(...row).changes > 0) inserted.push(row[0])
      else dups.set(row[0], (dups.get(row[0]) || 0) + 1)
    }
  }
  if (dups.size > 0) {
    const up = prepare(batch.duplicateSql)
    for (const [id, n] of dups) up.run(n, id)
  }
  for (const q of batch.extra) prepare(q.sql).run(...q.parameters)
  return inserted
})
// The file the service opened (its device and inode, from the thread that started this one): removed or replaced
// under the running service, every commit would go on into a file no path names, each 204 lost at the next start
// (src/db/file-identity.ts). Looked at before each batch (a stat, ~2 µs); failing, the batch is unavailable (503).
const stillOpened = () => {
  if (!workerData.opened) return
  let now
  try { now = require('node:fs').statSync(workerData.file) } catch { now = undefined }
  if (now && now.dev === workerData.opened.dev && now.ino === workerData.opened.ino) return
  const error = new Error(now ? workerData.gone.replaced : workerData.gone.removed)
  error.code = 'SQLITE_CANTOPEN'
  throw error
}
const run = whenFree((batch) => { stillOpened(); return transaction.immediate(batch) })
const pragma = whenFree((statement) => db.pragma(statement))
parentPort.on('message', (msg) => {
  if (msg.close) { db.close(); parentPort.postMessage({ closed: true }); return }
  if (msg.pragma) {
    try { parentPort.postMessage({ id: msg.id, ok: true, result: pragma(msg.pragma) }) }
    catch (error) { parentPort.postMessage({ id: msg.id, ok: false, message: String(error && error.message || error), code: error && error.code }) }
    return
  }
  try {
    parentPort.postMessage({ id: msg.id, ok: true, inserted: run(msg.batch) })
  } catch (error) {
    parentPort.postMessage({ id: msg.id, ok: false, message: String(error && error.message || error), code: error && typeof error.code === 'string' ? error.code : undefined })
  }
})
`

interface Reply {
  id?: number
  ok?: boolean
  inserted?: string[]
  message?: string
  code?: string
  result?: unknown
}

/** A failed write, with the SQLite result code (SQLITE_FULL, SQLITE_BUSY, …) for the caller to sort. */
export class SqliteWriteError extends Error {
  override readonly name = 'SqliteWriteError'
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message)
  }
}

/**
 * A thread that ends before it answered anything (its connection could not be opened: the folder gone, the file not
 * readable, no memory for a thread) is not started again for this long, doubling with each such failure up to
 * RESTART_MAX_MS; writes meanwhile fail at once with its error. Restarted for every batch instead, a retry storm of
 * deliveries started a thread (tens of ms of CPU) for each group commit while every one of them failed alike.
 */
export const RESTART_MIN_MS = 100
export const RESTART_MAX_MS = 5_000

export function startSqliteWriter(file: string, options: { clock?: Clock; opened?: FileIdentity } = {}): SqliteWriter {
  const clock = options.clock ?? systemClock
  // Which file the service opened at `file`: a thread started later (after a crash of the last) compares with it.
  const opened = options.opened ?? fileIdentity(file)
  // Its words when the file is gone (src/db/file-identity.ts), made here: the thread runs plain JavaScript.
  const gone = { removed: replacedFileMessage(file, 'removed'), replaced: replacedFileMessage(file, 'replaced') }
  const driver = createRequire(import.meta.url).resolve('better-sqlite3')
  let worker: Worker | undefined
  let seq = 0
  const waiting = new Map<number, { resolve(reply: Reply): void; reject(error: Error): void }>()
  /** Threads in a row that ended before answering, the last one's error, and when the next may start. */
  let startFailures = 0
  let startError: Error | undefined
  let nextStartAt = 0

  const failAll = (error: Error) => {
    for (const w of waiting.values()) w.reject(error)
    waiting.clear()
    worker = undefined
  }

  /** A thread ended before it answered anything: the next one waits. */
  const startFailed = (error: Error) => {
    startFailures++
    startError = error
    nextStartAt = clock.now() + Math.min(RESTART_MAX_MS, RESTART_MIN_MS * 2 ** (startFailures - 1))
  }

  const ensure = (): Worker => {
    if (worker) return worker
    const wait = nextStartAt - clock.now()
    if (startFailures > 0 && wait > 0) {
      const code = (startError as { code?: unknown } | undefined)?.code
      throw new SqliteWriteError(`the inbox writer thread could not start (${startError?.message}); trying again in ${Math.ceil(wait)} ms`, typeof code === 'string' ? code : undefined)
    }
    const w = new Worker(WORKER_SOURCE, { eval: true, workerData: { file, driver, autocheckpointPages: BACKSTOP_CHECKPOINT_PAGES, walSizeLimit: WAL_SIZE_LIMIT_BYTES, opened, gone } })
    w.unref()
    let answered = false
    w.on('message', (reply: Reply) => {
      if (reply.id === undefined) return
      if (!answered) {
        answered = true
        startFailures = 0
      }
      const entry = waiting.get(reply.id)
      waiting.delete(reply.id)
      if (!entry) return
      if (reply.ok) entry.resolve(reply)
      else entry.reject(new SqliteWriteError(reply.message ?? 'write failed', reply.code))
    })
    // An 'error' is followed by 'exit'; whichever comes first ends this thread (a later one is another's business).
    const ended = (error: Error) => {
      if (worker !== w) return
      if (!answered) startFailed(error)
      failAll(error)
    }
    w.on('error', ended)
    w.on('exit', (code) => ended(new Error(`the inbox writer thread exited (${code})`)))
    worker = w
    return w
  }

  const send = (message: Record<string, unknown>): Promise<Reply> =>
    new Promise<Reply>((resolve, reject) => {
      const id = ++seq
      waiting.set(id, { resolve, reject })
      try {
        ensure().postMessage({ id, ...message })
      } catch (error) {
        waiting.delete(id)
        reject(error as Error)
      }
    })

  return {
    async write(batch) {
      return (await send({ batch })).inserted ?? []
    },
    async pragma(statement) {
      return (await send({ pragma: statement })).result
    },
    async close() {
      const w = worker
      if (!w) return
      worker = undefined
      await closeWorker(w)
    },
  }
}
