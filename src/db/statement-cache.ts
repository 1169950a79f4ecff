import type { Database as BetterSqlite3Database, Statement } from 'better-sqlite3'
import type { SqliteDatabase, SqliteStatement } from 'kysely'
import { whileBusy } from './busy-wait.ts'

/** Distinct SQL texts kept prepared per connection (the app's queries number in the low hundreds). */
const MAX_STATEMENTS = 1_000

const preparedOn = new WeakMap<BetterSqlite3Database, Map<string, Statement>>()

/**
 * The connection's prepared statement for `sql`, prepared once and reused by SQL text (least recently used
 * dropped past MAX_STATEMENTS). Shared by kysely's path (withStatementCache) and the synchronous one
 * (src/db/sqlite-transaction.ts). Reuse is safe: each caller runs a statement to completion (`all`/`run`) before
 * the next, and SQLite re-prepares a statement by itself when the schema changes under it.
 */
export function preparedStatement(sqlite: BetterSqlite3Database, sql: string): Statement {
  let statements = preparedOn.get(sqlite)
  if (!statements) preparedOn.set(sqlite, (statements = new Map()))
  const known = statements.get(sql)
  if (known) {
    // Most recently used last, so the oldest entry is the one evicted.
    statements.delete(sql)
    statements.set(sql, known)
    return known
  }
  const prepared = sqlite.prepare(sql)
  if (statements.size >= MAX_STATEMENTS) statements.delete(statements.keys().next().value!)
  statements.set(sql, prepared)
  return prepared
}

/**
 * The connection as kysely's SQLite dialect sees it, with prepared statements reused by SQL text
 * (preparedStatement), each run waiting for the write lock by polling (src/db/busy-wait.ts; the connection's
 * busy_timeout is 0). kysely prepares every query it runs; compiling the same statement again each time was a
 * tenth of the processing worker's CPU.
 */
export function withStatementCache(sqlite: BetterSqlite3Database): SqliteDatabase {
  // kysely's view of each prepared statement, made once per statement.
  const views = new WeakMap<Statement, SqliteStatement>()
  return {
    close: () => {
      preparedOn.delete(sqlite)
      sqlite.close()
    },
    prepare(sql: string) {
      // A COMMIT that fails with SQLITE_FULL (or IOERR) has rolled the transaction back already; kysely's ROLLBACK
      // after it then threw "cannot rollback - no transaction is active", and that error replaced the disk-full one
      // in every log line and event record. Nothing open: nothing to roll back.
      if (sql === 'rollback') return idleRollback(sqlite, () => preparedStatement(sqlite, sql))
      const prepared = preparedStatement(sqlite, sql)
      let statement = views.get(prepared)
      if (!statement) {
        statement = {
          reader: prepared.reader,
          all: (parameters) => whileBusy(() => prepared.all(parameters)),
          run: (parameters) => whileBusy(() => prepared.run(parameters)),
          // Rows are read lazily: only the first step can meet the lock, and readers never do in WAL mode.
          iterate: (parameters) => prepared.iterate(parameters),
        }
        views.set(prepared, statement)
      }
      return statement
    },
  }
}

function idleRollback(sqlite: BetterSqlite3Database, prepare: () => Statement): SqliteStatement {
  const noop = { changes: 0, lastInsertRowid: 0 }
  return {
    reader: false,
    all: () => (sqlite.inTransaction ? prepare().all() : []),
    run: () => (sqlite.inTransaction ? prepare().run() : noop),
    iterate: () => (sqlite.inTransaction ? prepare().iterate() : [][Symbol.iterator]()),
  }
}

/** The SQL texts prepared on this connection now (a test checks none carries a value that changes, such as a time). */
export function preparedSqlTexts(sqlite: BetterSqlite3Database): string[] {
  return [...(preparedOn.get(sqlite)?.keys() ?? [])]
}
