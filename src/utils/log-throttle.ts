/**
 * At most one log line per key and window: a flood of one refusal (a scanner's bad signatures, a sender retrying a
 * broken body) writes a line a window, the next saying how many were left out, instead of one per request.
 */
export interface LogThrottle {
  /** Whether to log now, and how many lines of this key were left out since the last one logged. */
  take(key: string, now: number): { log: boolean; suppressed: number }
}

/** Keys kept at most (unknown targets' names come from URLs): past it the oldest windows are forgotten. */
const MAX_KEYS = 1_000

export function createLogThrottle(windowMs: number): LogThrottle {
  const keys = new Map<string, { until: number; suppressed: number }>()
  return {
    take(key, now) {
      const entry = keys.get(key)
      if (entry && now < entry.until) {
        entry.suppressed++
        return { log: false, suppressed: 0 }
      }
      const suppressed = entry?.suppressed ?? 0
      keys.delete(key)
      if (keys.size >= MAX_KEYS) keys.delete(keys.keys().next().value!)
      keys.set(key, { until: now + windowMs, suppressed: 0 })
      return { log: true, suppressed }
    },
  }
}
