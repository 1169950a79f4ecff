import type { Database as BetterSqlite3Database } from 'better-sqlite3'
import type { SqliteDatabase, SqliteStatement } from 'kysely'
import { whileBusy } from './busy-wait.ts'

/** Distinct SQL texts kept prepared (the app's queries number in the low hundreds; IN lists vary in length). */
const MAX_STATEMENTS = 1_000

/**
 * The connection as kysely's SQLite dialect sees it, with prepared statements reused by SQL text, each run
 * waiting for the write lock by polling (src/db/busy-wait.ts; the connection's busy_timeout is 0). kysely
 * prepares every query it runs; compiling the same statement again each time was a tenth of the processing
 * worker's CPU. Reuse is safe here: kysely runs a statement to completion (`all`/`run`) before the next
 * query, and SQLite re-prepares a statement by itself when the schema changes under it.
 */
export function withStatementCache(sqlite: BetterSqlite3Database): SqliteDatabase {
  const statements = new Map<string, SqliteStatement>()
  return {
    close: () => {
      statements.clear()
      sqlite.close()
    },
    prepare(sql: string) {
      const known = statements.get(sql)
      if (known) {
        // Most recently used last, so the oldest entry is the one evicted.
        statements.delete(sql)
        statements.set(sql, known)
        return known
      }
      const prepared = sqlite.prepare(sql)
      const statement: SqliteStatement = {
        reader: prepared.reader,
        all: (parameters) => whileBusy(() => prepared.all(parameters)),
        run: (parameters) => whileBusy(() => prepared.run(parameters)),
        // Rows are read lazily: only the first step can meet the lock, and readers never do in WAL mode.
        iterate: (parameters) => prepared.iterate(parameters),
      }
      if (statements.size >= MAX_STATEMENTS) statements.delete(statements.keys().next().value!)
      statements.set(sql, statement)
      return statement
    },
  }
}
