import type { SandboxFaults } from '../config/schema.ts'
import type { Random } from '../utils/random.ts'

export const NO_FAULTS: SandboxFaults = { webhookDuplicate: 0, webhookDrop: 0, webhookReorder: 0, upstream500: 0, upstream500After: 0, latencyMs: 0 }

/**
 * The API-side faults: a 500 before any side effect (by probability, or the next N requests when a test
 * asks), a 500 after it (the request was carried out and its answer lost: a call was placed), and latency added
 * to every response. Webhook faults live with the dispatcher.
 */
export function createFaultInjector(initial: SandboxFaults, random: Random) {
  const faults: SandboxFaults = { ...initial }
  let forced = 0
  return {
    /** The live settings; the webhook dispatcher reads them at each event. */
    faults,
    set(patch: Partial<SandboxFaults>) {
      Object.assign(faults, patch)
    },
    failNext(count: number) {
      forced += Math.max(0, Math.floor(count))
    },
    shouldFail(): boolean {
      if (forced > 0) {
        forced--
        return true
      }
      return faults.upstream500 > 0 && random.next() < faults.upstream500
    },
    /** Whether a request that was carried out answers 500 all the same (`upstream_500_after`). */
    shouldFailAfter(): boolean {
      return faults.upstream500After > 0 && random.next() < faults.upstream500After
    },
  }
}
export type FaultInjector = ReturnType<typeof createFaultInjector>
