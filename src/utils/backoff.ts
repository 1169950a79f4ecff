const BACKOFF_BASE_MS = 2_000
const BACKOFF_MAX_MS = 15 * 60_000

/** Delay before attempt `attempts + 1`: exponential, capped, with jitter so replicas do not align. */
export function backoffMs(attempts: number, random: () => number): number {
  const base = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, attempts - 1))
  return Math.round(base * (0.75 + random() * 0.5))
}
