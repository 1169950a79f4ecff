/**
 * Resolves on the event loop's next turn, after the I/O and messages already waiting. A loop of awaits on
 * better-sqlite3 (synchronous under kysely's promises) never leaves the microtask queue by itself: everything
 * else on its thread — messages from another thread, timers, sockets — waits until the loop ends.
 */
export function nextTurn(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve))
}
