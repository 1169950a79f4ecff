/** Per-key request quota: a fixed window aligned to the minute, as the provider's Reset header suggests. */
export interface KeyWindow {
  allowed: boolean
  limit: number
  remaining: number
  /** Epoch ms when the window resets. */
  resetAt: number
}

export function createKeyRateLimiter(limit: number, windowMs = 60_000) {
  const windows = new Map<string, { start: number; count: number }>()
  return {
    hit(key: string, now: number): KeyWindow {
      const start = now - (now % windowMs)
      let w = windows.get(key)
      if (!w || w.start !== start) {
        w = { start, count: 0 }
        windows.set(key, w)
      }
      const allowed = w.count < limit
      if (allowed) w.count++
      return { allowed, limit, remaining: Math.max(0, limit - w.count), resetAt: start + windowMs }
    },
  }
}

/** Calls per destination number: a sliding window, so a burst cannot straddle a window boundary. */
export function createNumberRateLimiter(limit: number, windowMs = 10 * 60_000) {
  /**
   * Numbers in the order they were last called, so those not called within the window are always at the front:
   * each call forgets them from there (a long-running sandbox calls many numbers once), never scanning the rest.
   */
  const hits = new Map<string, number[]>()
  const forgetExpired = (now: number) => {
    for (const [key, list] of hits) {
      if (list[list.length - 1]! > now - windowMs) break
      hits.delete(key)
    }
  }
  const recent = (key: string, now: number) => {
    const list = (hits.get(key) ?? []).filter((t) => t > now - windowMs)
    if (list.length) hits.set(key, list)
    else hits.delete(key)
    return list
  }
  return {
    /** Seconds until the number may be called again, or undefined when it may be called now. */
    retryAfter(key: string, now: number): number | undefined {
      const list = recent(key, now)
      if (list.length < limit) return undefined
      return Math.max(1, Math.ceil((list[list.length - limit]! + windowMs - now) / 1000))
    },
    record(key: string, now: number) {
      forgetExpired(now)
      const list = recent(key, now)
      list.push(now)
      hits.delete(key)
      hits.set(key, list)
    },
    /** Numbers with a call inside the window. */
    tracked: () => hits.size,
  }
}

/** `2026-03-18T20:54:00+00:00`: ISO 8601 with an explicit offset, as in the provider's example. */
export function isoWithOffset(epochMs: number): string {
  return new Date(epochMs).toISOString().replace(/\.\d{3}Z$/, '+00:00')
}
