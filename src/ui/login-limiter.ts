import type { H3Event } from 'h3'
import type { Clock } from '../utils/clock.ts'

/**
 * Failed logins are limited per client and in all: 10 per client per 15 minutes; past 100 in all, every client
 * is slowed to one try a minute, and clients with no recent failure share one try every few seconds. The overall
 * limit bounds a guesser who rotates addresses — each new address used to get a free try, so the guesses were
 * bounded only by the addresses at hand (an IPv6 /64 is endless) — without locking anyone out for long: the owner's
 * try waits seconds, not the window. The bearer token keeps working for scripts.
 */
export const LOGIN_WINDOW_MS = 15 * 60_000
export const LOGIN_MAX_PER_CLIENT = 10
export const LOGIN_MAX_TOTAL = 100
/** Past LOGIN_MAX_TOTAL failures in the window: one try per client this often. */
export const LOGIN_SLOWED_MS = 60_000
/** Past LOGIN_MAX_TOTAL failures in the window: one try this often among all clients with no recent failure of their own. */
export const LOGIN_SLOWED_NEW_MS = 5_000

export interface LoginLimiter {
  /** Milliseconds to wait before trying again, or 0 when a try is allowed. */
  retryAfterMs(client: string): number
  recordFailure(client: string): void
  recordSuccess(client: string): void
}

interface Window {
  start: number
  failures: number
  /** When this client last failed (epoch ms); for the overall window, when a client with no recent failure did. */
  lastFailure?: number
}

/** Whether a client failed within LOGIN_SLOWED_MS: past the overall limit, its own minute applies to it. */
function isRecent(client: Window, now: number): boolean {
  return client.lastFailure !== undefined && now - client.lastFailure < LOGIN_SLOWED_MS
}

export function createLoginLimiter(clock: Clock): LoginLimiter {
  const clients = new Map<string, Window>()
  const total: Window = { start: clock.now(), failures: 0 }
  const current = (w: Window, now: number): Window => {
    if (now - w.start >= LOGIN_WINDOW_MS) {
      w.start = now
      w.failures = 0
    }
    return w
  }
  return {
    retryAfterMs(client) {
      const now = clock.now()
      const mine = clients.get(client)
      if (mine && current(mine, now).failures >= LOGIN_MAX_PER_CLIENT) return mine.start + LOGIN_WINDOW_MS - now
      const slowed = current(total, now).failures >= LOGIN_MAX_TOTAL
      if (!slowed) return 0
      if (mine && isRecent(mine, now)) return mine.lastFailure! + LOGIN_SLOWED_MS - now
      if (total.lastFailure !== undefined && now - total.lastFailure < LOGIN_SLOWED_NEW_MS) return total.lastFailure + LOGIN_SLOWED_NEW_MS - now
      return 0
    },
    recordFailure(client) {
      const now = clock.now()
      current(total, now).failures++
      let mine = clients.get(client)
      // A try that drew on the slot clients with no recent failure share.
      if (!mine || !isRecent(mine, now)) total.lastFailure = now
      if (!mine) clients.set(client, (mine = { start: now, failures: 0 }))
      current(mine, now).failures++
      mine.lastFailure = now
      // Forget quiet clients so the map cannot grow without bound.
      if (clients.size > 10_000) for (const [k, w] of clients) if (now - w.start >= LOGIN_WINDOW_MS) clients.delete(k)
    },
    recordSuccess(client) {
      clients.delete(client)
    },
  }
}

/**
 * Who is logging in: the peer address, or — when the peer is a proxy on loopback — the address that proxy
 * appended last to X-Forwarded-For (the entries before it are whatever the client claimed).
 */
export function loginClientKey(event: H3Event): string {
  const peer = event.runtime?.node?.req?.socket?.remoteAddress ?? 'local'
  const forwarded = event.req.headers.get('x-forwarded-for')
  if (forwarded && /^(127\.|::1$|::ffff:127\.)/.test(peer)) {
    const last = forwarded.split(',').map((s) => s.trim()).filter(Boolean).pop()
    if (last) return `fwd:${last}`
  }
  return peer
}
