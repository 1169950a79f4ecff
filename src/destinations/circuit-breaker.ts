/**
 * Per-destination circuit breaker (in each replica's memory). After `threshold` failed attempts in a row
 * the destination is paused ('open'): nothing is claimed for it, so its backlog waits in the outbox
 * instead of burning attempts, and other destinations are unaffected. When the pause ends it is
 * 'half-open': one delivery goes out as a probe; success closes the breaker, failure pauses it again for
 * twice as long (capped).
 */
export type BreakerState = 'closed' | 'open' | 'half-open'

export interface CircuitBreaker {
  state(now: number): BreakerState
  /** When the current pause ends (0 when not paused). */
  pausedUntil(): number
  /** Failed attempts in a row. */
  failures(): number
  success(): void
  failure(now: number): void
  /** Ends a pause now (an operator's `destinations enable`): the next delivery goes out as the probe. */
  resume(): void
}

export interface BreakerOptions {
  threshold?: number
  basePauseMs?: number
  maxPauseMs?: number
}

export function createCircuitBreaker(options: BreakerOptions = {}): CircuitBreaker {
  const threshold = options.threshold ?? 5
  const basePause = options.basePauseMs ?? 30_000
  const maxPause = options.maxPauseMs ?? 10 * 60_000
  let failures = 0
  let openUntil = 0
  let pauses = 0
  return {
    state(now) {
      if (failures < threshold) return 'closed'
      return now < openUntil ? 'open' : 'half-open'
    },
    pausedUntil: () => (failures >= threshold ? openUntil : 0),
    failures: () => failures,
    success() {
      failures = 0
      pauses = 0
      openUntil = 0
    },
    resume() {
      // Half-open at once; the pause count stays, so a probe that fails pauses it for longer, as after any pause.
      if (failures >= threshold) openUntil = 0
    },
    failure(now) {
      failures++
      if (failures >= threshold && now >= openUntil) {
        openUntil = now + Math.min(maxPause, basePause * 2 ** pauses)
        pauses++
      }
    },
  }
}
