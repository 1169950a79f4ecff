import type { Runtime } from '../runtime.ts'
import { listEvents, type EventFilter } from '../webhooks/events.ts'
import { EventBusyError, requeueEvent } from '../webhooks/processing.ts'

/** At most this many events are queued again by one click. */
export const REQUEUE_MAX = 5_000

/**
 * "Replay all": every failed or dead event matching the filter goes back in the queue (pending,
 * attempts reset) for the workers to process with every hook — the same as `events replay` — rather than
 * being processed inside the request. Returns how many were queued: an event a worker holds right now, or that
 * left failed/dead since the list was read, is not.
 */
export async function requeueMatching(rt: Runtime, filter: EventFilter): Promise<number> {
  const statuses = filter.status ? [filter.status].flat().filter((s) => s === 'failed' || s === 'dead') : ['failed', 'dead']
  if (statuses.length === 0) return 0
  const events = await listEvents(rt, { ...filter, status: statuses, after: undefined, limit: REQUEUE_MAX })
  let queued = 0
  for (const e of events) {
    // Only while it is still failed or dead and no worker holds it: one a worker is retrying right now, or that
    // was processed since the list was read, is left as it is.
    try {
      if (await requeueEvent(rt, e.event_id, { onlyStatuses: statuses })) queued++
    } catch (error) {
      if (!(error instanceof EventBusyError)) throw error
    }
  }
  return queued
}
