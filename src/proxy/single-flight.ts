export interface SingleFlight<T> {
  /**
   * Runs `fn` for `key`, or joins the run already in flight for it: every caller gets that run's result or
   * its failure. The run belongs to no caller, so one that goes away (a client that hung up) stops nobody's.
   */
  run(key: string, fn: () => Promise<T>): Promise<T>
  /** Callers for keys starting with `prefix` start a new run from now on (those already joined keep theirs). */
  forget(prefix: string): void
}

/**
 * In-process request coalescing: concurrent identical cache misses make one upstream request instead of
 * one each (which burned the key's rate limit, and held every caller for its own full timeout when the
 * provider hung). In-process only: replicas each make their own, which is enough to bound the burst.
 */
export function createSingleFlight<T>(options: { onJoin?(key: string): void } = {}): SingleFlight<T> {
  const flights = new Map<string, Promise<T>>()
  return {
    run(key, fn) {
      const current = flights.get(key)
      if (current) {
        options.onJoin?.(key)
        return current
      }
      const flight: Promise<T> = fn().finally(() => {
        if (flights.get(key) === flight) flights.delete(key)
      })
      flights.set(key, flight)
      return flight
    },
    forget(prefix) {
      for (const key of flights.keys()) if (key.startsWith(prefix)) flights.delete(key)
    },
  }
}
