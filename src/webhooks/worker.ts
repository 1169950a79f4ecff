import type { Runtime } from '../runtime.ts'
import { claimDue, processClaimedBatch } from './processing.ts'
import { claimSize, yieldToReceiver } from '../coordination/receiver-load.ts'
import { nextTurn } from '../utils/next-turn.ts'
import { logRepeatedError } from '../utils/repeated-error-log.ts'

/** The periodic sweep picks up retries that fell due and events requeued by another process. */
export const SWEEP_MS = 1_000
// Large enough that a burst is a few read-model commits and recipe batches, not thousands. 500 rather than 200:
// a drain of 15,000 events with the shipped recipes ~5–10 % less CPU (fewer commits and claims; the recipe's
// batches grow with it, up to RECIPE_BATCH_MAX). While the receiver takes deliveries a claim is 50 at most
// (src/coordination/receiver-load.ts), so the write lock is held no longer then.
const BATCH = 500

export interface Worker {
  /** Processes due events now (called right after a commit). */
  wake(): void
  /** Resolves when the current pass (if any) has finished. */
  idle(): Promise<void>
  stop(): Promise<void>
}

/**
 * The processing worker: woken after every commit (no polling delay on the happy path), plus a sweep
 * on the runtime's clock for retries. Claims make it safe to run one per replica.
 */
export function startWorker(rt: Runtime): Worker {
  const owner = `${rt.instanceId}:worker`
  let stopped = false
  let pass: Promise<void> | undefined
  let again = false
  let cancelSweep: (() => void) | undefined

  async function runPass(): Promise<void> {
    do {
      again = false
      // In the processing thread, a burst at the receiver goes first (src/coordination/receiver-load.ts).
      await yieldToReceiver(rt)
      if (stopped) return
      let rows
      // Smaller while the receiver takes deliveries: its commits wait on processing's write transactions.
      const limit = claimSize(rt, BATCH)
      try {
        rows = await claimDue(rt, owner, limit)
      } catch (error) {
        logRepeatedError(rt, { err: (error as Error).message }, 'webhook worker could not claim events')
        return
      }
      if (rows.length > 0 && !stopped) {
        try {
          await processClaimedBatch(rt, rows, owner)
        } catch (error) {
          // Recording the outcomes failed (storage down): the claims lapse and a later pass retries.
          rt.log.error({ events: rows.length, err: (error as Error).message }, 'webhook worker could not record outcomes')
        }
      }
      if (rows.length === limit) again = true
      // Between batches, the rest of the thread gets its turn: on SQLite a drain is otherwise one unbroken chain of
      // promises, and a /metrics scrape sent to the processing thread went unanswered (its series missing, the
      // backlog gauges among them) until the whole backlog was processed.
      if (again && !stopped) await nextTurn()
    } while (again && !stopped)
  }

  function scheduleSweep(): void {
    cancelSweep?.()
    if (stopped) return
    cancelSweep = rt.clock.setTimeout(() => wake(), SWEEP_MS)
  }

  function wake(): void {
    if (stopped) return
    if (pass) {
      again = true
      return
    }
    pass = runPass().finally(() => {
      pass = undefined
      if (again && !stopped) wake()
      else scheduleSweep()
    })
  }

  wake()
  return {
    wake,
    async idle() {
      for (let i = 0; i < 1000 && pass; i++) await pass
    },
    async stop() {
      stopped = true
      cancelSweep?.()
      await pass
    },
  }
}
