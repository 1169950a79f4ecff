import type { RateLimitInfo } from '../upstream/errors.ts'
import { rateLimitResetMs } from '../upstream/rate-limit-reset.ts'

/**
 * What the provider said about a tenant's limits, and so when the next request may go. Fed from every
 * answer's X-RateLimit-Remaining/Reset and from 429s (Retry-After, concurrent_call_limit_exceeded).
 */
export interface Pacer {
  /** Epoch ms before which no request for this tenant should start (0: now). */
  notBefore(tenant: string, now: number): number
  started(tenant: string): void
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
   * already spent.
   */
  atCapacity(tenant: string): boolean
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
  /** Sends allowed at once after a concurrency limit (undefined: no such limit met, or widened past it). */
  window: number | undefined
  maxCalls: number | undefined
}

/** How soon a tenant at its concurrency window is looked at again (a send finishing wakes the queue sooner). */
export const CAPACITY_RECHECK_MS = 1_000

export function createPacer(): Pacer {
  const tenants = new Map<string, TenantState>()
  const stateOf = (tenant: string): TenantState => {
    let s = tenants.get(tenant)
    if (!s) tenants.set(tenant, (s = { heard: false, inFlight: 0, remaining: undefined, resetAt: 0, blockedUntil: 0, window: undefined, maxCalls: undefined }))
    return s
  }
  const notBefore = (s: TenantState, now: number): number => {
    if (s.blockedUntil > now) return s.blockedUntil
    // Requests already in flight spend the remaining quota too: wait for the window's reset when they would use it up.
    if (s.remaining !== undefined && s.resetAt > now && s.remaining - s.inFlight <= 0) return s.resetAt
    return 0
  }
  const atCapacity = (s: TenantState): boolean => (!s.heard && s.inFlight >= 1) || (s.window !== undefined && s.inFlight >= s.window)
  return {
    notBefore: (tenant, now) => notBefore(stateOf(tenant), now),
    held(now) {
      const held = new Map<string, number>()
      for (const [tenant, s] of tenants) {
        const at = notBefore(s, now)
        if (at > now) held.set(tenant, at)
        else if (atCapacity(s)) held.set(tenant, now + CAPACITY_RECHECK_MS)
      }
      return held
    },
    started(tenant) {
      stateOf(tenant).inFlight++
    },
    finished(tenant, info, now) {
      const s = stateOf(tenant)
      s.heard = true
      s.inFlight = Math.max(0, s.inFlight - 1)
      if (info?.remaining !== undefined) s.remaining = info.remaining
      const reset = rateLimitResetMs(info?.reset)
      if (reset !== undefined) s.resetAt = reset
      else if (s.resetAt <= now) s.remaining = undefined
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
      s.window++
      if (s.maxCalls !== undefined && s.window >= s.maxCalls) s.window = undefined
    },
    atCapacity: (tenant) => atCapacity(stateOf(tenant)),
  }
}
