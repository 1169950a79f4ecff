/**
 * When to try a delivery again. The destination's `retryScheduleMs` lists the waits before each retry, so
 * its length sets the attempts (length + 1 in all); each wait is jittered ±20 % so queued deliveries do
 * not all hit a recovering sink at once. A `Retry-After` from a 429/503 can lengthen the scheduled wait,
 * never shorten it: a sink answering `Retry-After: 0` must not run the ~24 h schedule out in minutes.
 */

const JITTER = 0.2
/** A Retry-After further out than this is treated as this (a misconfigured sink must not park forever). */
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000

/** The wait after attempt `roundAttempts` failed, or undefined when the schedule is exhausted. */
export function retryDelayMs(schedule: number[], roundAttempts: number, random: () => number): number | undefined {
  const base = schedule[roundAttempts - 1]
  if (base === undefined) return undefined
  return Math.round(base * (1 - JITTER + random() * 2 * JITTER))
}

/** The scheduled wait, or the sink's `Retry-After` (capped) when that is longer. */
export function waitWithRetryAfter(scheduledMs: number, retryAfterMs: number | undefined): number {
  if (retryAfterMs === undefined) return scheduledMs
  return Math.max(scheduledMs, Math.min(MAX_RETRY_AFTER_MS, retryAfterMs))
}
