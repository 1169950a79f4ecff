import type { Runtime } from '../runtime.ts'
import { recordAttempts, type AttemptRecord } from './outbox.ts'

/**
 * Group commit of attempt outcomes, shared by every destination lane of a worker: outcomes that land
 * while a commit runs go into the next one, so the commit rate (one fsync each on SQLite) stays flat as
 * deliveries per second grow.
 */
export interface AttemptRecorder {
  push(record: AttemptRecord): void
  busy(): boolean
  /** Resolves when everything pushed so far is committed (or given up on). */
  settle(): Promise<void>
}

export function createAttemptRecorder(rt: Runtime, owner: string, onCommitted: () => void): AttemptRecorder {
  const pending: AttemptRecord[] = []
  let flushing: Promise<void> | undefined

  function flush(): void {
    if (flushing) return
    flushing = (async () => {
      // Let every answer already on the wire land first: better-sqlite3 commits synchronously, so without
      // this yield each commit would carry one outcome and block the loop for its fsync.
      await new Promise<void>((resolve) => setImmediate(resolve))
      while (pending.length > 0) {
        const batch = pending.splice(0)
        try {
          await recordAttempts(rt, owner, batch)
        } catch (error) {
          // Storage is down: the claims lapse and the deliveries go out again later (at least once).
          rt.log.error({ deliveries: batch.length, err: (error as Error).message }, 'could not record delivery outcomes')
        }
      }
    })().finally(() => {
      flushing = undefined
      // Recorded outcomes free claims and unblock the next delivery of an ordered conversation.
      onCommitted()
    })
  }

  return {
    push(record) {
      pending.push(record)
      flush()
    },
    busy: () => pending.length > 0 || Boolean(flushing),
    async settle() {
      for (let i = 0; i < 100 && (flushing || pending.length); i++) {
        if (!flushing) flush()
        await flushing
      }
    },
  }
}
