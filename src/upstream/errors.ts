import { errorBodySchema, type ErrorType } from './schemas.ts'
import { parseRetryAfter } from '../utils/retry-after.ts'
import { senderClockOffsetMs } from '../utils/sender-clock.ts'
import { rateLimitResetMs } from './rate-limit-reset.ts'

/** Rate-limit headers as the provider sends them. */
export interface RateLimitInfo {
  limit: number | undefined
  remaining: number | undefined
  /** ISO 8601 with offset, as sent. */
  reset: string | undefined
  /**
   * `reset` as an instant on this machine's clock (epoch ms): the provider's instant moved by how far its clock is from
   * this one, as its `Date` header tells (src/utils/sender-clock.ts); undefined when `reset` is absent or invalid.
   */
  resetAt: number | undefined
  /** Seconds, from Retry-After (its HTTP-date form as the whole seconds from now to that date, rounded up). */
  retryAfter: number | undefined
}

export type VoiceApiErrorType = ErrorType | 'network_error' | 'timeout' | 'invalid_response'

/**
 * An error from the provider, typed: `type` is the provider's error type (or network_error / timeout /
 * invalid_response when no answer could be read), `status` the HTTP status (0 when there was none).
 * `placedEarlier` marks the one 409 that is not a failure: see the field.
 */
export class VoiceApiError extends Error {
  override readonly name = 'VoiceApiError'
  readonly type: VoiceApiErrorType
  readonly status: number
  readonly currentCalls: number | undefined
  readonly maxCalls: number | undefined
  readonly rateLimit: RateLimitInfo
  /** The error body as received, when there was one. */
  readonly body: unknown
  /**
   * True on a 409 duplicate_request that answered a retry of createCall whose earlier attempt, with the same
   * idempotency key, got no readable answer (a timeout, a network error or a 5xx): that attempt most likely
   * placed the call, so the call exists. The provider's 409 carries no call, hence an error rather than a
   * CallResponse; `cause` is the earlier attempt's error. Never place the call again with a new key.
   */
  readonly placedEarlier: boolean
  /**
   * Call creation only: the idempotency key its attempts were sent with (the caller's, or the one the client added).
   * A caller retrying a failed call later must send this same key, never a new one.
   */
  readonly idempotencyKey: string | undefined
  /**
   * Call creation only: true when an attempt of this call got no readable answer (a timeout, a network error, a 5xx)
   * and no later answer settled the question — the call may exist although this error says otherwise (a 429 after a
   * lost attempt, say). Retry only with `idempotencyKey`: the provider then answers 409 if the call exists.
   */
  readonly mayHaveBeenPlaced: boolean
  /**
   * When no answer came (`status` 0): the system's code for why, as the network stack gave it — ECONNREFUSED,
   * ENOTFOUND, EAI_AGAIN, ECONNRESET, UND_ERR_CONNECT_TIMEOUT, … — or undefined when it gave none (the client's own
   * deadline, an abort).
   */
  readonly networkCode: string | undefined
  /**
   * True when the request provably never reached the provider: its last attempt failed before a connection existed
   * (the connection refused, the host name not found, the connect timed out) and no earlier attempt went unanswered.
   * Nothing was carried out, so it is safe to send again — unlike a timeout or a connection reset after sending, whose
   * request may have been carried out with its answer lost. Always false for an answer the provider gave.
   */
  readonly neverSent: boolean

  constructor(init: {
    type: VoiceApiErrorType
    status: number
    message: string
    currentCalls?: number | undefined
    maxCalls?: number | undefined
    rateLimit?: RateLimitInfo
    body?: unknown
    cause?: unknown
    placedEarlier?: boolean
    idempotencyKey?: string | undefined
    mayHaveBeenPlaced?: boolean
    networkCode?: string | undefined
    neverSent?: boolean
  }) {
    super(init.message, { cause: init.cause })
    this.type = init.type
    this.status = init.status
    this.currentCalls = init.currentCalls
    this.maxCalls = init.maxCalls
    this.rateLimit = init.rateLimit ?? { limit: undefined, remaining: undefined, reset: undefined, resetAt: undefined, retryAfter: undefined }
    this.body = init.body
    this.placedEarlier = init.placedEarlier ?? false
    this.idempotencyKey = init.idempotencyKey
    this.mayHaveBeenPlaced = init.mayHaveBeenPlaced ?? false
    this.networkCode = init.networkCode
    this.neverSent = init.neverSent ?? false
  }

  /** Seconds to wait before trying again, when the provider said. */
  get retryAfterSeconds(): number | undefined {
    return this.rateLimit.retryAfter
  }
}

export function isVoiceApiError(error: unknown): error is VoiceApiError {
  return error instanceof VoiceApiError
}

function num(value: string | null): number | undefined {
  if (value === null || value.trim() === '') return undefined
  const n = Number(value)
  return Number.isFinite(n) ? n : undefined
}

/**
 * The rate-limit headers of an answer read at `now`. `Retry-After` is delta-seconds from the provider itself, but a
 * gateway or CDN in front of it may send the HTTP-date form (RFC 9110 allows both): read as "not before" that date.
 * The instants (`X-RateLimit-Reset`, a `Retry-After` date) are the provider's: read against its clock, as the answer's
 * `Date` tells it, not this machine's (src/utils/sender-clock.ts).
 */
export function readRateLimit(headers: Headers, now: number): RateLimitInfo {
  const offset = senderClockOffsetMs(headers.get('date'), now)
  const waitMs = parseRetryAfter(headers.get('retry-after') ?? undefined, now + offset)
  const reset = headers.get('x-ratelimit-reset') ?? undefined
  const resetOnProvider = rateLimitResetMs(reset)
  return {
    limit: num(headers.get('x-ratelimit-limit')),
    remaining: num(headers.get('x-ratelimit-remaining')),
    reset,
    resetAt: resetOnProvider === undefined ? undefined : resetOnProvider - offset,
    retryAfter: waitMs === undefined ? undefined : Math.ceil(waitMs / 1000),
  }
}

/** Builds the typed error from an error response's status, headers and parsed body. */
export function errorFromResponse(status: number, headers: Headers, body: unknown, now: number): VoiceApiError {
  const parsed = errorBodySchema.safeParse(body)
  const rateLimit = readRateLimit(headers, now)
  if (parsed.success) {
    const e = parsed.data.error
    return new VoiceApiError({
      type: e.type as ErrorType,
      status,
      message: e.message,
      currentCalls: e.current_calls,
      maxCalls: e.max_calls,
      rateLimit,
      body,
    })
  }
  // A gateway's HTML page or an empty body: typed by the status, as the proxy types it, so a caller branching on
  // `type` still reads a 401 as authentication_error and a 409 as duplicate_request.
  return new VoiceApiError({ type: errorTypeOfStatus(status), status, message: `HTTP ${status} with no error body`, rateLimit, body })
}

/**
 * The provider's error type for an HTTP status (spec → Errors), for an answer that came without the
 * provider's error body (a gateway's HTML page, an empty body): a client branches on `type`, so a 401
 * must still read as authentication_error, not as a bad request. 429 is the per-number/API rate limit;
 * the concurrent-call limit always comes with its own body.
 */
export function errorTypeOfStatus(status: number): ErrorType {
  if (status >= 500) return 'internal_error'
  switch (status) {
    case 401:
      return 'authentication_error'
    case 404:
      return 'not_found'
    case 409:
      return 'duplicate_request'
    case 429:
      return 'rate_limit_exceeded'
    default:
      return 'invalid_request'
  }
}
