import { isUnreachableError } from './open-error.ts'

/**
 * Postgres aborted the transaction for another one — a deadlock (40P01), a serialization conflict (40001) — or a
 * lock it waited for past its `lock_timeout` (55P03): it can run again.
 */
const PG_CONFLICTS = new Set(['40P01', '40001', '55P03'])

/**
 * Whether a write that failed with `error` may be taken if it is written again in a moment: the database unreachable
 * (src/db/open-error.ts: a dropped connection, a failover, a restart), SQLite's write lock held by another connection
 * past the wait for it (SQLITE_BUSY), or a conflict with another transaction. Not a statement the database refused
 * (a constraint, a value it cannot store), a full disk or a bug (a missing table): those would fail again.
 */
export function isMomentaryError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || PG_CONFLICTS.has(code))) return true
  return isUnreachableError(error)
}
