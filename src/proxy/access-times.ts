import type { Runtime } from '../runtime.ts'

/** Tables whose rows carry an LRU `last_access_at` keyed by `key`. */
type LruTable = 'cache_entries' | 'recordings'

const FLUSH_AFTER_MS = 1_000
const CHUNK = 200

export interface AccessTimes {
  /** Notes a read; written within a second, batched, so a HIT never waits for a write. */
  touch(key: string): void
  /** Writes every noted read now (before eviction reads the order). */
  flush(): Promise<void>
}

/** Batched last-access writes for an LRU table: a hot entry read 10,000 times costs one UPDATE a second. */
export function createAccessTimes(rt: Runtime, table: LruTable): AccessTimes {
  const touched = new Set<string>()
  let timer: (() => void) | undefined

  async function flush(): Promise<void> {
    timer?.()
    timer = undefined
    if (touched.size === 0) return
    const keys = [...touched]
    touched.clear()
    const now = rt.clock.now()
    for (let i = 0; i < keys.length; i += CHUNK) {
      await rt.store.db.updateTable(table).set({ last_access_at: now }).where('key', 'in', keys.slice(i, i + CHUNK)).execute()
    }
  }

  return {
    touch(key) {
      touched.add(key)
      timer ??= rt.clock.setTimeout(() => {
        timer = undefined
        void flush().catch((err: unknown) => rt.log.warn({ err, table }, 'last-access flush failed'))
      }, FLUSH_AFTER_MS)
    },
    flush,
  }
}
