import type { Runtime } from '../runtime.ts'
import { COMMIT_DEADLINE_MS, createInbox, type Inbox } from './inbox.ts'
import { webhookMetrics } from './metrics.ts'
import type { Worker } from './worker.ts'

/** Per-runtime webhook machinery: one inbox (so all requests share group commits) and the worker, if started. */
export interface WebhookState {
  inbox: Inbox
  worker: Worker | undefined
  /**
   * The receiver's last commit, when it failed (storage full or unavailable): /readyz says so until one succeeds, or —
   * when a probe of the database saw the same failure (`probeSees`: unreachable, not a full disk or a read-only
   * replica, which reads alone do not show) — until the database answers again.
   */
  storageTrouble: { at: number; error: string; probeSees: boolean } | undefined
}

const states = new WeakMap<Runtime, WebhookState>()

export function webhookState(rt: Runtime): WebhookState {
  let state = states.get(rt)
  if (!state) {
    const inbox = createInbox(rt.store, {
      onBatch: (size) => webhookMetrics(rt.metrics).commitBatchSize.observe(size),
      deadline: { clock: rt.clock, ms: COMMIT_DEADLINE_MS },
    })
    const created: WebhookState = { inbox, worker: undefined, storageTrouble: undefined }
    created.inbox.onCommitted(() => created.worker?.wake())
    rt.onClose(() => created.inbox.close())
    states.set(rt, created)
    state = created
  }
  return state
}
