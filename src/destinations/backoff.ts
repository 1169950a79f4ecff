/**
 * When to try a delivery again. The destination's `retryScheduleMs` lists the waits before each retry, so
 * its length sets the attempts (length + 1 in all); each wait is jittered ±20 % so queued deliveries do
 * not all hit a recovering sink at once. A `Retry-After` from a 429/503 replaces the scheduled wait.
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

/** Parses `Retry-After` (seconds or an HTTP date) into a wait from `now`; undefined when absent or invalid. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (!value) return undefined
  const trimmed = value.trim()
  if (/^\d+$/.test(trimmed)) return Math.min(MAX_RETRY_AFTER_MS, Number(trimmed) * 1000)
  const at = Date.parse(trimmed)
  if (Number.isNaN(at)) return undefined
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, at - now))
}
