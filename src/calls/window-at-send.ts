import { isWithinWindow, nextCallingTime, type CallingWindow } from '../campaigns/calling-window.ts'
import type { CallRequest } from '../upstream/schemas.ts'

/** The recipient's calling window as a queued call carries it (`call_queue.calling_window`). */
export interface QueuedWindow extends CallingWindow {
  timeZone: string
}

/** A call due within this long goes out now, without `scheduled_for` (as `scheduleCalls` decides it). */
const IMMEDIATE_WITHIN_MS = 60_000

/** The stored column's text for a window; null when the call has none. */
export function windowColumn(window: QueuedWindow | undefined): string | null {
  return window ? JSON.stringify({ timeZone: window.timeZone, start: window.start, end: window.end }) : null
}

function parseWindow(text: string | null): QueuedWindow | undefined {
  if (!text) return undefined
  try {
    const value = JSON.parse(text) as Partial<QueuedWindow>
    if (typeof value.timeZone === 'string' && typeof value.start === 'string' && typeof value.end === 'string') return value as QueuedWindow
  } catch {
    // a row no version of switchboard wrote: sent as it is
  }
  return undefined
}

/**
 * A queued call as it must go out at `now`. The time was put inside the recipient's calling window when it was
 * queued, but the provider's limits (429s, its concurrent-call limit, the pacer) can hold it back for hours: a call
 * queued at 20:55 may only reach the front at 21:20. Sent as it was, the provider would ring the recipient at
 * once, outside the window. So the window is applied again at the moment of sending: a due time that now falls
 * outside it moves to the next opening (as `scheduled_for`, which the provider holds), and one that has slipped
 * into the past becomes an immediate call. The idempotency key is unchanged: if an earlier attempt reached the
 * provider, it answers `duplicate_request` whatever the new body says.
 *
 * Returns the request to send and, when the time moved, the new scheduled time (epoch ms).
 */
export function requestInWindow(request: CallRequest, stored: string | null, now: number): { request: CallRequest; movedTo?: number } {
  const window = parseWindow(stored)
  if (!window) return { request }
  const due = request.scheduled_for ? Math.max(Date.parse(request.scheduled_for), now) : now
  if (!Number.isFinite(due)) return { request }
  let at: number
  try {
    at = nextCallingTime(due, window.timeZone, window)
  } catch {
    return { request }
  }
  // Sent at once only inside the window: a due time a minute before it opens is moved to the opening too.
  if (at - now > IMMEDIATE_WITHIN_MS || !isWithinWindow(now, window.timeZone, window)) {
    if (request.scheduled_for !== undefined && at === Date.parse(request.scheduled_for)) return { request }
    return { request: { ...request, scheduled_for: new Date(at).toISOString() }, movedTo: at }
  }
  if (request.scheduled_for === undefined) return { request }
  const { scheduled_for: _past, ...immediate } = request
  return { request: immediate }
}
