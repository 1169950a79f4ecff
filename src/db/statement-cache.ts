import type { Database as BetterSqlite3Database, Statement } from 'better-sqlite3'
import type { SqliteDatabase } from 'kysely'

/** Distinct SQL texts kept prepared (the app's queries number in the low hundreds; IN lists vary in length). */
const MAX_STATEMENTS = 1_000

/**
 * The connection as kysely's SQLite dialect sees it, with prepared statements reused by SQL text. kysely
 * prepares every query it runs; compiling the same statement again each time was a tenth of the processing
 * worker's CPU. Reuse is safe here: kysely runs a statement to completion (`all`/`run`) before the next
 * query, and SQLite re-prepares a statement by itself when the schema changes under it.
 */
export function withStatementCache(sqlite: BetterSqlite3Database): SqliteDatabase {
  const statements = new Map<string, Statement>()
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
      const statement = sqlite.prepare(sql)
      if (statements.size >= MAX_STATEMENTS) statements.delete(statements.keys().next().value!)
      statements.set(sql, statement)
      return statement
    },
  }
}
