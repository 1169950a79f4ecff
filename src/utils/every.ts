import type { Clock } from './clock.ts'
import type { Logger } from './logger.ts'

/**
 * Runs `job` first after `firstMs`, then `everyMs` after each run ends, on the injected clock, never
 * overlapping itself. A failing run is logged and the next one runs on schedule. Returns a stop function
 * that waits for a run in progress; the job's signal is aborted first, so a long job can end early.
 */
export function every(clock: Clock, log: Logger, name: string, firstMs: number, everyMs: number, job: (signal: AbortSignal) => Promise<unknown>): () => Promise<void> {
  let cancel: (() => void) | undefined
  let running: Promise<unknown> | undefined
  let stopped = false
  const stopping = new AbortController()
  const tick = () => {
    running = job(stopping.signal)
      .catch((error) => log.warn({ job: name, err: (error as Error)?.message ?? String(error) }, `${name} failed; will try again`))
      .finally(() => {
        running = undefined
        if (!stopped) cancel = clock.setTimeout(tick, everyMs)
      })
  }
  cancel = clock.setTimeout(tick, firstMs)
  return async () => {
    stopped = true
    stopping.abort()
    cancel?.()
    await running
  }
}
