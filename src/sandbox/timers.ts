import type { Clock } from '../utils/clock.ts'

/** Node timers overflow above 2^31-1 ms (~24.8 days) and fire at once; schedules reach 30 days. */
const MAX_TIMER_MS = 2 ** 30

export interface Timers {
  /** Runs `fn` after `ms` on the clock. */
  after(ms: number, fn: () => void): () => void
  /** Runs `fn` at the epoch instant `at`, however far away. */
  at(at: number, fn: () => void): () => void
  /** Cancels everything still waiting (sandbox close). */
  cancelAll(): void
  pending(): number
}

/** The sandbox's timers: all on the injected clock, all cancellable at once. */
export function createTimers(clock: Clock): Timers {
  const live = new Set<() => void>()
  let closed = false
  const timers: Timers = {
    after(ms, fn) {
      if (closed) return () => {}
      let cancel: () => void = () => {}
      const entry = () => cancel()
      cancel = clock.setTimeout(() => {
        live.delete(entry)
        fn()
      }, Math.max(0, ms))
      live.add(entry)
      return () => {
        live.delete(entry)
        cancel()
      }
    },
    at(at, fn) {
      let cancelCurrent: () => void = () => {}
      const arm = () => {
        const wait = at - clock.now()
        if (wait > MAX_TIMER_MS) cancelCurrent = timers.after(MAX_TIMER_MS, arm)
        else cancelCurrent = timers.after(wait, fn)
      }
      arm()
      return () => cancelCurrent()
    },
    cancelAll() {
      closed = true
      for (const cancel of [...live]) cancel()
      live.clear()
    },
    pending: () => live.size,
  }
  return timers
}
