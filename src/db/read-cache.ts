import type { Database as BetterSqlite3Database } from 'better-sqlite3'
import type { Store } from './connect.ts'

/**
 * The page cache a large read gets, in KiB (SQLite's default is 2,000 KiB). A day's report reads 100,000
 * conversations through an index on when they ended, so it visits the table's pages in no particular order
 * and, with the default cache, reads most of them from the file again and again: on the reference machine the
 * plain read took 1.0–1.1 s against 0.8–1.0 s with this cache, and the whole report (`npm run bench -- report`,
 * three alternated pairs) 1.73–2.23 s against 1.47–1.52 s.
 */
export const LARGE_READ_CACHE_KIB = 65_536

/** Reads under way per connection, and the cache size to put back when the last one ends. */
const raisedOn = new WeakMap<BetterSqlite3Database, { reads: number; before: number }>()

/** The connection's page cache in KiB (`cache_size` is in KiB when negative, in pages when positive). */
function cacheKib(sqlite: BetterSqlite3Database, cacheSize: number): number {
  return cacheSize < 0 ? -cacheSize : (cacheSize * (sqlite.pragma('page_size', { simple: true }) as number)) / 1024
}

/**
 * Runs `read` with this connection's page cache raised to at least LARGE_READ_CACHE_KIB, then puts the cache
 * size back once no such read is under way on the connection. SQLite then frees the pages over the limit for the
 * process's next allocations, but glibc's allocator keeps most of that memory mapped: the process's RSS stays near
 * its peak (up to ~64 MB more per connection that ran such a read) rather than falling back. SQLite only; on
 * Postgres `read` runs as it is.
 */
export async function withLargeReadCache<T>(store: Pick<Store, 'sqlite'>, read: () => Promise<T>): Promise<T> {
  const sqlite = store.sqlite
  if (!sqlite) return read()
  let raised = raisedOn.get(sqlite)
  if (raised) raised.reads++
  else {
    const before = sqlite.pragma('cache_size', { simple: true }) as number
    raised = { reads: 1, before }
    raisedOn.set(sqlite, raised)
    if (cacheKib(sqlite, before) < LARGE_READ_CACHE_KIB) sqlite.pragma(`cache_size = ${-LARGE_READ_CACHE_KIB}`)
  }
  try {
    return await read()
  } finally {
    if (--raised.reads === 0) {
      raisedOn.delete(sqlite)
      if (sqlite.open) sqlite.pragma(`cache_size = ${raised.before}`)
    }
  }
}
