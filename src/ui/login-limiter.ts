import type { H3Event } from 'h3'
import type { Clock } from '../utils/clock.ts'

/**
 * Failed logins are limited per client and in all: 10 per client per 15 minutes; past 100 in all, every client
 * is slowed to one try a minute. The overall limit slows a guesser who rotates addresses without letting them
 * lock the owner out (a client with no recent failure can always try); the bearer token keeps working for scripts.
 */
export const LOGIN_WINDOW_MS = 15 * 60_000
export const LOGIN_MAX_PER_CLIENT = 10
export const LOGIN_MAX_TOTAL = 100
/** Past LOGIN_MAX_TOTAL failures in the window: one try per client this often. */
export const LOGIN_SLOWED_MS = 60_000

export interface LoginLimiter {
  /** Milliseconds to wait before trying again, or 0 when a try is allowed. */
  retryAfterMs(client: string): number
  recordFailure(client: string): void
  recordSuccess(client: string): void
}

interface Window {
  start: number
  failures: number
  /** When this client last failed (epoch ms). */
  lastFailure?: number
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
      if (slowed && mine?.lastFailure !== undefined && now - mine.lastFailure < LOGIN_SLOWED_MS) return mine.lastFailure + LOGIN_SLOWED_MS - now
      return 0
    },
    recordFailure(client) {
      const now = clock.now()
      current(total, now).failures++
      let mine = clients.get(client)
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
