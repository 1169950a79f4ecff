import type { DestinationConfig } from '../config/destinations.ts'
import { parseRetryAfter } from '../utils/retry-after.ts'
import { senderClockOffsetMs } from '../utils/sender-clock.ts'
import { retryDelayMs, waitWithRetryAfter } from './backoff.ts'
import type { SendResult } from './http-send.ts'

export type AttemptResult = 'delivered' | 'retry' | 'dead' | 'disabled'

export interface Outcome {
  result: AttemptResult
  nextAttemptAt: number
  countsInRound: boolean
  error: string | null
}

/**
 * What an answer means: 2xx delivered; 410 disables the destination (the delivery waits, its schedule
 * untouched); anything else — other 4xx/5xx, 413, a redirect, a timeout, a refused address — is a failed
 * attempt, retried per the schedule (a valid 429/503 `Retry-After` can lengthen the scheduled wait, never
 * shorten it) until the schedule runs out and the delivery is dead.
 */
export function classify(destination: DestinationConfig, roundAttempts: number, sent: SendResult, now: number, random: () => number): Outcome {
  const status = sent.status
  if (status !== null && status >= 200 && status < 300) return { result: 'delivered', nextAttemptAt: now, countsInRound: true, error: null }
  if (status === 410) return { result: 'disabled', nextAttemptAt: now, countsInRound: false, error: 'destination answered 410 Gone; disabled' }
  const error = sent.error ?? `HTTP ${status}`
  const round = roundAttempts + 1
  const scheduled = retryDelayMs(destination.retryScheduleMs, round, random)
  if (scheduled === undefined) return { result: 'dead', nextAttemptAt: now, countsInRound: true, error }
  // A Retry-After date is an instant on the destination's clock, placed on this machine's by the answer's Date.
  const retryAfter = status === 429 || status === 503 ? parseRetryAfter(sent.retryAfter, now + senderClockOffsetMs(sent.date, now)) : undefined
  return { result: 'retry', nextAttemptAt: now + waitWithRetryAfter(scheduled, retryAfter), countsInRound: true, error }
}
