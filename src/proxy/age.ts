/**
 * A kept answer's Age in whole seconds (RFC 9111 §5.1): how long ago it was stored. Every answer served from the cache
 * carries it — JSON entries and recordings alike — and a caller's `max-age` is compared with it.
 */
export function ageSeconds(stored: { stored_at: number }, now: number): number {
  return Math.max(0, Math.floor((now - stored.stored_at) / 1000))
}
