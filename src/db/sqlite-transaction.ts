import type { CompiledQuery } from 'kysely'
import { whileBusy } from './busy-wait.ts'
import type { Store } from './connect.ts'
import { preparedStatement } from './statement-cache.ts'

/** What `inImmediateTransaction` hands its function: queries kysely compiled, run synchronously. */
export interface SyncQueries {
  /** The rows of a query that returns rows. */
  all<R>(query: CompiledQuery<R>): R[]
  /** Runs a statement; returns how many rows it changed. */
  run(query: CompiledQuery): number
}

/**
 * Runs `fn` in one BEGIN IMMEDIATE transaction on the store's SQLite connection — its statements compiled by
 * kysely (the typed schema), bound and run synchronously by better-sqlite3, each prepared once in the cache kysely's
 * path uses too (src/db/statement-cache.ts) — and commits, or rolls back if `fn` throws. `fn` runs again if SQLite
 * was busy, so it must do nothing outside the database.
 * For hot paths that read and then write many rows: a transaction that starts by reading (kysely's BEGIN) could
 * not take the write lock once another connection had committed since (SQLITE_BUSY_SNAPSHOT); this one takes the
 * lock first, waiting for it by polling (src/db/busy-wait.ts). It holds kysely's connection meanwhile, so no
 * other query of this process runs inside it. Statements run this way skip kysely's per-query machinery; their
 * results are better-sqlite3's (no kysely plugins apply). SQLite only: the caller keeps its own path for Postgres.
 */
export async function inImmediateTransaction<T>(store: Store, fn: (queries: SyncQueries) => T): Promise<T> {
  const sqlite = store.sqlite
  if (!sqlite) throw new Error('inImmediateTransaction runs on SQLite only')
  const queries: SyncQueries = {
    all: <R>(query: CompiledQuery<R>) => preparedStatement(sqlite, query.sql).all(...query.parameters) as R[],
    run: (query) => preparedStatement(sqlite, query.sql).run(...query.parameters).changes,
  }
  const transaction = sqlite.transaction(() => fn(queries))
  return store.db.connection().execute(async () => whileBusy(() => transaction.immediate()))
}
