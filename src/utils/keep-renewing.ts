import type { Clock } from './clock.ts'

/**
 * Calls `renew` every `everyMs` on `clock` (each call after the previous one settled; its errors are left to
 * `renew`) until the returned function is called; that function resolves once no renewal is running. For work
 * that may outlast the claim it holds: renewing at a fraction of the claim keeps other processes from taking it
 * for the work of a dead one, while a process that dies stops renewing and its claim lapses as before.
 */
export function keepRenewing(clock: Clock, everyMs: number, renew: () => Promise<unknown>): () => Promise<void> {
  let stopped = false
  let cancel: (() => void) | undefined
  let running: Promise<void> | undefined
  const tick = () => {
    if (stopped) return
    running = renew()
      .then(
        () => {},
        () => {},
      )
      .finally(() => {
        running = undefined
        if (!stopped) cancel = clock.setTimeout(tick, everyMs)
      })
  }
  cancel = clock.setTimeout(tick, everyMs)
  return async () => {
    stopped = true
    cancel?.()
    await running
  }
}
