import type { H3Event } from 'h3'
import type { Clock } from '../utils/clock.ts'

/**
 * Failed logins are limited per client and in all: 10 per client and 100 in all per 15 minutes. The
 * overall cap stops a guesser who rotates addresses (or X-Forwarded-For values); the bearer token keeps
 * working for scripts while the login form is locked.
 */
export const LOGIN_WINDOW_MS = 15 * 60_000
export const LOGIN_MAX_PER_CLIENT = 10
export const LOGIN_MAX_TOTAL = 100

export interface LoginLimiter {
  /** Milliseconds to wait before trying again, or 0 when a try is allowed. */
  retryAfterMs(client: string): number
  recordFailure(client: string): void
  recordSuccess(client: string): void
}

interface Window {
  start: number
  failures: number
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
      const all = current(total, now)
      if (all.failures >= LOGIN_MAX_TOTAL) return all.start + LOGIN_WINDOW_MS - now
      const mine = clients.get(client)
      if (mine && current(mine, now).failures >= LOGIN_MAX_PER_CLIENT) return mine.start + LOGIN_WINDOW_MS - now
      return 0
    },
    recordFailure(client) {
      const now = clock.now()
      current(total, now).failures++
      let mine = clients.get(client)
      if (!mine) clients.set(client, (mine = { start: now, failures: 0 }))
      current(mine, now).failures++
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
