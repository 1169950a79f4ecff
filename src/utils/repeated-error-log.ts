import type { Runtime } from '../runtime.ts'
import { createLogThrottle, type LogThrottle } from './log-throttle.ts'

/** How often one background loop's same failure is logged while it lasts. */
export const REPEATED_ERROR_WINDOW_MS = 30_000

const throttles = new WeakMap<Runtime, LogThrottle>()

/**
 * Logs a background loop's failure (`msg` with `err`) at error level — the first at once, the same again at most once
 * per REPEATED_ERROR_WINDOW_MS, that line saying how many were left out (`not_logged_since`). With the database down, the
 * worker, the call queue and each recipe's event queue each wrote a line a second (~11,000 an hour a replica), burying
 * the lines an operator looks for. A different error, or another recipe's, is logged at once.
 */
export function logRepeatedError(rt: Runtime, fields: Record<string, unknown> & { err: string }, msg: string, log: Runtime['log'] = rt.log): void {
  let throttle = throttles.get(rt)
  if (!throttle) throttles.set(rt, (throttle = createLogThrottle(REPEATED_ERROR_WINDOW_MS)))
  const { log: now, suppressed } = throttle.take(`${msg}\0${String(fields.recipe ?? '')}\0${fields.err}`, rt.clock.now())
  if (!now) return
  log.error(suppressed > 0 ? { ...fields, not_logged_since: suppressed } : fields, msg)
}
