import type { Runtime } from '../runtime.ts'
import { CLAIM_MS, claimDue, processClaimed, renewClaims } from './processing.ts'

/** The periodic sweep picks up retries that fell due and events requeued by another process. */
export const SWEEP_MS = 1_000
const BATCH = 25

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
      let rows
      try {
        rows = await claimDue(rt, owner, BATCH)
      } catch (error) {
        rt.log.error({ err: (error as Error).message }, 'webhook worker could not claim events')
        return
      }
      let renewedAt = rt.clock.now()
      for (const [i, row] of rows.entries()) {
        if (stopped) break
        if (rt.clock.now() - renewedAt > CLAIM_MS / 3) {
          renewedAt = rt.clock.now()
          await renewClaims(rt, owner, rows.slice(i).map((r) => r.event_id)).catch(() => {})
        }
        try {
          await processClaimed(rt, row, owner)
        } catch (error) {
          // Recording the outcome failed (storage down): the claim lapses and another pass retries.
          rt.log.error({ event_id: row.event_id, err: (error as Error).message }, 'webhook worker could not record an outcome')
        }
      }
      if (rows.length === BATCH) again = true
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
