import type { RateLimitInfo } from '../upstream/errors.ts'

/**
 * What the provider said about a tenant's limits, and so when the next request may go. Fed from every
 * answer's X-RateLimit-Remaining/Reset and from 429s (Retry-After, concurrent_call_limit_exceeded).
 *
 * A window's remaining quota is spread over what is left of the window (REMAINING / time to the reset), with bursts of
 * at most a twentieth of it: spent as fast as the queue can send, a campaign's follow-ups took the whole minute's quota
 * in its first seconds, and every other request on the key — the team's own through the proxy, a recipe's reads — met
 * a 429 for the rest of the minute. The calls still all go within the windows they would have; none later than the
 * quota allows.
 */
export interface Pacer {
  /** Epoch ms before which no request for this tenant should start (0: now). */
  notBefore(tenant: string, now: number): number
  /** How many requests for this tenant may start now (Infinity: the provider has set no pace). */
  allowance(tenant: string, now: number): number
  started(tenant: string, now: number): void
  finished(tenant: string, info: RateLimitInfo | undefined, now: number): void
  /** A 429 for the whole tenant (rate or concurrency limit): nothing goes before `until`. */
  block(tenant: string, until: number): void
  /**
   * A concurrent_call_limit_exceeded: besides the block, at most one send at a time for the tenant from then on,
   * one more with each call the provider accepts (up to `maxCalls`, when it said), back to one on the next. The limit
   * counts calls in progress, which end one by one: without it every send held back went at once when the wait was
   * over, and all but one met the limit again.
   */
  limitConcurrency(tenant: string, until: number, maxCalls: number | undefined): void
  /** A call the provider accepted: widens a tenant's concurrency window (see limitConcurrency). */
  accepted(tenant: string): void
  /**
   * True while the tenant has as many sends in flight as its concurrency window allows — and, until the provider has
   * answered a first send for it, while one is in flight: a process that knows nothing of a tenant's limits yet (just
   * started) sends one request first instead of a send slot's worth, each of which would meet a limit another process
   * already spent. So does a window that has ended: until the new window's first answer says what it allows, one
   * request, not a send slot's worth (a fixed-window limit of 60 a minute took 32 at each window's start).
   */
  atCapacity(tenant: string, now: number): boolean
  /** Tenants that may not send now, each with the time it may again. */
  held(now: number): Map<string, number>
}

interface TenantState {
  /** Whether the provider has answered a send for this tenant yet (any answer, or none at all: a send that ended). */
  heard: boolean
  inFlight: number
  remaining: number | undefined
  resetAt: number
  blockedUntil: number
  /** Sends allowed at once after a concurrency limit (undefined: no such limit met, or widened past it with no `max_calls` known). */
  window: number | undefined
  maxCalls: number | undefined
  /** Requests that may start now under the window's pace (see `refill`), and when that was worked out. */
  tokens: number
  tokensAt: number
}

/** At most this share of a window's remaining quota goes in one burst (at least one request). */
const BURST_SHARE = 1 / 20

/** How soon a tenant at its concurrency window is looked at again (a send finishing wakes the queue sooner). */
export const CAPACITY_RECHECK_MS = 1_000

export function createPacer(): Pacer {
  const tenants = new Map<string, TenantState>()
  const stateOf = (tenant: string): TenantState => {
    let s = tenants.get(tenant)
    if (!s) tenants.set(tenant, (s = { heard: false, inFlight: 0, remaining: undefined, resetAt: 0, blockedUntil: 0, window: undefined, maxCalls: undefined, tokens: 0, tokensAt: 0 }))
    return s
  }
  /** The quota left for new requests in the current window (in-flight requests spend it too), or undefined: no window known. */
  const budget = (s: TenantState, now: number): number | undefined => (s.remaining !== undefined && s.resetAt > now ? s.remaining - s.inFlight : undefined)
  /** Brings the tenant's tokens up to `now` at the window's pace: what is left of the quota over what is left of the window. */
  const refill = (s: TenantState, now: number, left: number): void => {
    const cap = Math.max(1, Math.floor(left * BURST_SHARE))
    const perMs = left / (s.resetAt - now)
    s.tokens = Math.min(cap, s.tokens + Math.max(0, now - s.tokensAt) * perMs)
    s.tokensAt = now
  }
  const notBefore = (s: TenantState, now: number): number => {
    if (s.blockedUntil > now) return s.blockedUntil
    const left = budget(s, now)
    if (left === undefined) return 0
    // Requests already in flight spend the remaining quota too: wait for the window's reset when they would use it up.
    if (left <= 0) return s.resetAt
    refill(s, now, left)
    return s.tokens >= 1 ? 0 : Math.min(s.resetAt, now + Math.ceil(((1 - s.tokens) * (s.resetAt - now)) / left))
  }
  /** The window the provider told of has ended, and no answer has told of the next one yet. */
  const windowEnded = (s: TenantState, now: number): boolean => s.remaining !== undefined && s.resetAt <= now
  const atCapacity = (s: TenantState, now: number): boolean =>
    ((!s.heard || windowEnded(s, now)) && s.inFlight >= 1) || (s.window !== undefined && s.inFlight >= s.window)
  return {
    notBefore: (tenant, now) => notBefore(stateOf(tenant), now),
    allowance(tenant, now) {
      const s = stateOf(tenant)
      if (notBefore(s, now) > now || atCapacity(s, now)) return 0
      if (windowEnded(s, now)) return 1
      return budget(s, now) === undefined ? Infinity : Math.floor(s.tokens)
    },
    held(now) {
      const held = new Map<string, number>()
      for (const [tenant, s] of tenants) {
        const at = notBefore(s, now)
        if (at > now) held.set(tenant, at)
        else if (atCapacity(s, now)) held.set(tenant, now + CAPACITY_RECHECK_MS)
      }
      return held
    },
    started(tenant, now) {
      const s = stateOf(tenant)
      const left = budget(s, now)
      if (left !== undefined && left > 0) {
        refill(s, now, left)
        s.tokens = Math.max(0, s.tokens - 1)
      }
      s.inFlight++
    },
    finished(tenant, info, now) {
      const s = stateOf(tenant)
      s.heard = true
      s.inFlight = Math.max(0, s.inFlight - 1)
      const windowBefore = s.resetAt
      if (info?.remaining !== undefined) s.remaining = info.remaining
      const reset = info?.resetAt
      if (reset !== undefined) s.resetAt = reset
      else if (s.resetAt <= now) s.remaining = undefined
      // A new window starts with one request's worth: its pace builds from there (a burst after a quiet spell is at most
      // BURST_SHARE of the quota left, whatever the pace was before).
      if (s.resetAt !== windowBefore) {
        s.tokens = Math.min(s.tokens, 1)
        s.tokensAt = now
      }
    },
    block(tenant, until) {
      const s = stateOf(tenant)
      s.blockedUntil = Math.max(s.blockedUntil, until)
    },
    limitConcurrency(tenant, until, maxCalls) {
      const s = stateOf(tenant)
      s.blockedUntil = Math.max(s.blockedUntil, until)
      s.window = 1
      if (maxCalls !== undefined && maxCalls > 0) s.maxCalls = maxCalls
    },
    accepted(tenant) {
      const s = stateOf(tenant)
      if (s.window === undefined) return
      // Up to what the provider said it allows (`max_calls`), and no further: it opened to the queue's whole concurrency.
      if (s.maxCalls === undefined || s.window < s.maxCalls) s.window++
    },
    atCapacity: (tenant, now) => atCapacity(stateOf(tenant), now),
  }
}
