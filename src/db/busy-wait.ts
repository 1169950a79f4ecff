/** How long a statement waits for SQLite's write lock before it fails with SQLITE_BUSY. */
export const BUSY_LIMIT_MS = 5_000

const nap = new Int32Array(new SharedArrayBuffer(4))

/**
 * Runs `fn`, retrying while SQLite answers SQLITE_BUSY (another connection holds the write lock), polling
 * every 0.1 ms for the first 50 ms and every 1 ms after, up to BUSY_LIMIT_MS. SQLite's own busy handler
 * (`busy_timeout`) sleeps in steps that grow to 100 ms: against another thread's stream of short
 * transactions it keeps missing the gaps, and a 2 ms write waited up to seconds. Connections using this
 * set `busy_timeout = 0`. Only plain SQLITE_BUSY is retried (not SQLITE_BUSY_SNAPSHOT: that transaction
 * must start over). The inbox writer thread (src/webhooks/sqlite-writer.ts) has its own copy: it runs
 * plain JavaScript.
 */
export function whileBusy<T>(fn: () => T): T {
  const started = performance.now()
  for (;;) {
    try {
      return fn()
    } catch (error) {
      const waited = performance.now() - started
      if ((error as { code?: unknown } | null)?.code !== 'SQLITE_BUSY' || waited >= BUSY_LIMIT_MS) throw error
      Atomics.wait(nap, 0, 0, waited < 50 ? 0.1 : 1)
    }
  }
}
