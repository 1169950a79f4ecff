import type { Runtime } from '../runtime.ts'
import { optOutFromEvent } from './dnc.ts'

/**
 * Adds a number to the do-not-call list as soon as a processed event's results ask for it, instead of
 * waiting for the follow-up sweep. Idempotent (the DNC insert is), as event hooks must be.
 */
export function registerOptOutHook(rt: Runtime): void {
  rt.hooks.on('dnc-opt-out', async ({ event }) => {
    await optOutFromEvent(rt, event)
  })
}
