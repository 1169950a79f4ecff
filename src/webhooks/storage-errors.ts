/**
 * Sorting storage errors by what they mean for a delivery: the database being unavailable or out of
 * space (503 + Retry-After: try again later) against one event the database refused (its batch is
 * retried row by row, and that event alone is answered 400) or held by another transaction (retried row by row, and
 * that event alone is answered 503).
 */
export type StorageFailure = 'full' | 'unavailable' | 'refused' | 'contended'

/** SQLite result codes (better-sqlite3's `code`) that point at a row's data; the rest are about the database. */
const SQLITE_ROW = /^SQLITE_(TOOBIG|MISMATCH|CONSTRAINT|RANGE)/

/**
 * Postgres SQLSTATE classes that point at one row's data: 22 data exception (U+0000, value too long),
 * 23 integrity constraint, 54 program limit exceeded (an index row too large). Anything else —
 * connection errors (08), resources (53), shutdown (57), a missing table (42), a network error with no
 * SQLSTATE, a timeout — is the database being unavailable, and splitting the batch would not help.
 */
const PG_ROW_CLASSES = new Set(['22', '23', '54'])

export function classifyStorageError(error: unknown): StorageFailure {
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code === 'string') {
    if (code === 'SQLITE_FULL') return 'full'
    if (code.startsWith('SQLITE_')) return SQLITE_ROW.test(code) ? 'refused' : 'unavailable'
    if (/^[0-9A-Z]{5}$/.test(code)) {
      if (code === '53100') return 'full' // disk_full
      // lock_not_available: a row of the batch is held by another transaction past the inbox's lock_timeout — the
      // others need not wait for it (split, like a refused row), but that event is not refused, only held (503).
      if (code === '55P03') return 'contended'
      return PG_ROW_CLASSES.has(code.slice(0, 2)) ? 'refused' : 'unavailable'
    }
  }
  return 'unavailable'
}

/** Postgres aborted the transaction to break a deadlock (40P01) or a serialization conflict (40001): it can simply run again. */
export function isRetryableConflict(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === '40P01' || code === '40001'
}
