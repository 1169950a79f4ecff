import { nextTurn } from './next-turn.ts'

/**
 * Time as a dependency. Everything that reads the time or waits goes through a Clock, so tests drive
 * time by hand instead of sleeping.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number
  /**
   * Runs `fn` after `ms`; returns a function that cancels it. By default the timer does not keep the
   * process alive (background ticks must not hold a finished CLI command open); `keepAlive` is for a
   * wait that something is awaiting, which is work in progress.
   */
  setTimeout(fn: () => void, ms: number, options?: { keepAlive?: boolean }): () => void
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms, options) {
    const timer = setTimeout(fn, Math.max(0, ms))
    if (!options?.keepAlive) timer.unref?.()
    return () => clearTimeout(timer)
  },
}

/**
 * A clock whose time stands at `at` while its waits take real time: a test run of a recipe (`recipes test`,
 * `testRecipe`) sees one fixed `now`, yet its time limit (RECIPE_TIMEOUT_SECONDS) fires and the provider client's
 * retries go on — on a manual clock that nobody advances they waited for ever.
 */
export function createFrozenClock(at: number): Clock {
  return { now: () => at, setTimeout: (fn, ms, options) => systemClock.setTimeout(fn, ms, options) }
}

export interface ManualClock extends Clock {
  /** Moves time forward, running every timer that falls due, in order, letting promises settle between. */
  advance(ms: number): Promise<void>
  /** Moves time to an absolute instant (never backwards). */
  advanceTo(epochMs: number): Promise<void>
  /** Timers still waiting. */
  pending(): number
}

interface ManualTimer {
  at: number
  seq: number
  fn: () => void
}

/** A clock for tests: time stands still until `advance` is called. */
export function createManualClock(start: number | Date | string = '2026-01-01T00:00:00Z'): ManualClock {
  let current = typeof start === 'number' ? start : new Date(start).getTime()
  let seq = 0
  const timers = new Set<ManualTimer>()
  const settle = async () => {
    for (let i = 0; i < 20; i++) await nextTurn()
  }
  const clock: ManualClock = {
    now: () => current,
    setTimeout(fn, ms) {
      // Whole milliseconds, as the system clock reads (Date.now()): a timer set for a third of a claim's life must not
      // make `now()` fractional — a Postgres bigint column refuses 1767225663333.3333.
      const timer = { at: current + Math.max(0, Math.ceil(ms)), seq: seq++, fn }
      timers.add(timer)
      return () => {
        timers.delete(timer)
      }
    },
    async advanceTo(target) {
      await settle()
      for (;;) {
        let next: ManualTimer | undefined
        for (const t of timers) {
          if (t.at <= target && (!next || t.at < next.at || (t.at === next.at && t.seq < next.seq))) next = t
        }
        if (!next) break
        timers.delete(next)
        current = Math.max(current, next.at)
        next.fn()
        await settle()
      }
      current = Math.max(current, target)
      await settle()
    },
    advance: (ms) => clock.advanceTo(current + ms),
    pending: () => timers.size,
  }
  return clock
}

/**
 * Resolves after `ms` on the given clock. The wait keeps the process alive: someone awaits it, so
 * an event loop that empties meanwhile would end the process mid-command (Node's exit code 13,
 * "unsettled top-level await", with nothing printed).
 */
export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms, { keepAlive: true }))
}
