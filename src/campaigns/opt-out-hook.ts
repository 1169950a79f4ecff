import type { Runtime } from '../runtime.ts'
import { isProviderEvent, type EventConsumer } from '../events/hooks.ts'
import { optOutFromEvent, optOutMetrics } from './dnc.ts'

/**
 * Adds a number to the do-not-call list as soon as a processed event's results ask for it, instead of
 * waiting for the follow-up sweep. Idempotent (the DNC insert is), as consumers must be. An opt-out whose number
 * does not normalise is logged and counted (switchboard_dnc_unreadable_opt_outs_total, listed from here on at 0).
 */
export function optOutConsumer(rt: Runtime): EventConsumer {
  optOutMetrics(rt.metrics)
  return async (batch) => {
    const failures = new Map<string, Error>()
    for (const e of batch) {
      if (!isProviderEvent(e)) continue
      try {
        await optOutFromEvent(rt, e.event)
      } catch (error) {
        failures.set(e.eventId, new Error(`do-not-call opt-out failed: ${(error as Error).message}`, { cause: error }))
      }
    }
    return failures
  }
}
