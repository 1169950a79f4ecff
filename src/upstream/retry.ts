import type { Random } from '../utils/random.ts'
import type { VoiceApiError } from './errors.ts'

export interface RetryPolicy {
  /** Retries after the first attempt. */
  retries: number
  baseDelayMs: number
  maxDelayMs: number
  /** A 429 whose Retry-After is longer than this is returned instead of waited for. */
  maxRetryAfterMs: number
}

export const defaultRetryPolicy: RetryPolicy = {
  retries: 3,
  baseDelayMs: 300,
  maxDelayMs: 10_000,
  maxRetryAfterMs: 60_000,
}

/**
 * A failure that says nothing of what the provider did: a 5xx, a timeout or a network error. Such an
 * attempt may have been carried out (a call placed) with its answer lost, which is why only requests safe
 * to repeat are retried after one.
 */
export function isTransient(error: VoiceApiError): boolean {
  return error.status >= 500 || error.type === 'network_error' || error.type === 'timeout'
}

/**
 * The spec's client rules: 429 only after the time Retry-After / X-RateLimit-Reset gives; 5xx and
 * network errors with exponential backoff and full jitter, and only for requests that are safe to repeat
 * (GETs, and call creation carrying an idempotency key); never 400/401/404/409.
 * Returns the delay before the next attempt, or undefined to give up.
 */
export function retryDelay(input: {
  error: VoiceApiError
  attempt: number
  repeatable: boolean
  policy: RetryPolicy
  random: Random
  now: number
}): number | undefined {
  const { error, attempt, repeatable, policy, random, now } = input
  if (attempt > policy.retries) return undefined
  if (error.status === 429) {
    let wait: number | undefined
    if (error.rateLimit.retryAfter !== undefined) wait = error.rateLimit.retryAfter * 1000
    else {
      const at = error.rateLimit.resetAt
      if (at !== undefined) wait = Math.max(0, at - now)
    }
    if (wait === undefined || wait > policy.maxRetryAfterMs) return undefined
    return wait
  }
  if (!isTransient(error) || !repeatable) return undefined
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1))
  return Math.round(random.next() * ceiling)
}
