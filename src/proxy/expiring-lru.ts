export interface ExpiringLru {
  add(key: string): void
  /** Present and not expired (an expired key is dropped on the way). */
  has(key: string): boolean
  delete(key: string): void
  readonly size: number
}

/**
 * A bounded set of recent keys: each is forgotten `ttlMs` after it was added, and past `max` the least
 * recently used goes first, so no stream of distinct keys can grow it. Memory only: a restart forgets it.
 */
export function createExpiringLru(options: { max: number; ttlMs: () => number; now: () => number }): ExpiringLru {
  // A Map keeps insertion order: re-inserting on use makes its first key the least recently used.
  const addedAt = new Map<string, number>()
  return {
    add(key) {
      addedAt.delete(key)
      addedAt.set(key, options.now())
      if (addedAt.size > options.max) addedAt.delete(addedAt.keys().next().value!)
    },
    has(key) {
      const at = addedAt.get(key)
      if (at === undefined) return false
      addedAt.delete(key)
      if (options.now() - at >= options.ttlMs()) return false
      addedAt.set(key, at)
      return true
    },
    delete(key) {
      addedAt.delete(key)
    },
    get size() {
      return addedAt.size
    },
  }
}
