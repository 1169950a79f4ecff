import type { Runtime } from '../runtime.ts'
import { apiErrorResponse } from '../upstream/api-error.ts'
import { timeUpstreamRequest } from '../upstream/metrics.ts'

export type CacheStatus = 'HIT' | 'MISS' | 'STALE' | 'BYPASS'

export type UpstreamResult =
  | { ok: true; response: Response }
  | { ok: false; failure: 'unreachable' | 'timeout'; message: string }

/** Headers the provider sends that the caller must see on a live answer (`allow` on a 405, RFC 9110 §15.5.6). */
export const PASS_HEADERS = ['content-type', 'allow', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after'] as const
/**
 * What an answer streamed through as sent (a path or a query the proxy does not model: a recording asked with a
 * query, say) passes on besides: its bytes are the provider's, untouched, so their length, range, encoding and the
 * download's name describe them still. A 206 went out without its Content-Range (RFC 9110 §15.3.7).
 */
export const STREAMED_PASS_HEADERS = [
  ...PASS_HEADERS, 'content-length', 'content-range', 'accept-ranges', 'content-disposition', 'content-encoding', 'content-language',
  'etag', 'last-modified', 'cache-control', 'vary',
] as const
/** Statuses whose answers never have a body (Fetch standard, "null body status"; 101 never reaches here). */
export const NULL_BODY_STATUSES: ReadonlySet<number> = new Set([204, 205, 304])

const RATE_LIMIT_HEADERS = new Set(['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after'])

export function upstreamUrl(rt: Runtime, pathAndQuery: string): string {
  return `${rt.config.upstreamBaseUrl}${pathAndQuery}`
}

function describe(error: unknown): string {
  const e = error as { message?: string; cause?: { code?: string; message?: string } }
  return e.cause?.code ?? e.cause?.message ?? e.message ?? String(error)
}

/**
 * One upstream request with a deadline. `signal` replaces the default timeout (uploads bring their own
 * idle timer). Never retries: a GET that fails is answered from stale cache or reported to the caller.
 */
export async function fetchUpstream(
  rt: Runtime,
  init: { method: string; pathAndQuery: string; apiKey: string; headers?: Record<string, string>; body?: BodyInit | ReadableStream<Uint8Array> | null; signal?: AbortSignal },
): Promise<UpstreamResult> {
  const timeoutMs = rt.config.upstreamTimeoutMs
  const signal = init.signal ?? AbortSignal.timeout(timeoutMs)
  const record = timeUpstreamRequest(rt, init.method, init.pathAndQuery)
  try {
    const response = await fetch(upstreamUrl(rt, init.pathAndQuery), {
      method: init.method,
      headers: { authorization: `Bearer ${init.apiKey}`, accept: 'application/json', ...init.headers },
      body: init.body ?? null,
      signal,
      redirect: 'manual',
      ...(init.body ? { duplex: 'half' } : {}),
    } as RequestInit)
    // Judged as every provider client's requests are (src/health/upstream-observation.ts): a 5xx is down, a 4xx is up.
    record(response.status)
    return { ok: true, response }
  } catch (error) {
    const failure = failureOf(error, timeoutMs)
    record(0, failure.message)
    return failure
  }
}

export function failureOf(error: unknown, timeoutMs: number): { ok: false; failure: 'unreachable' | 'timeout'; message: string } {
  const name = (error as { name?: string }).name
  if (name === 'TimeoutError' || name === 'AbortError') {
    return { ok: false, failure: 'timeout', message: `the provider did not answer within ${timeoutMs} ms` }
  }
  return { ok: false, failure: 'unreachable', message: `cannot reach the provider (${describe(error)})` }
}

/** 502 (unreachable) or 504 (timeout) in the provider's error shape. */
export function failureResponse(result: { failure: 'unreachable' | 'timeout'; message: string }): Response {
  return withCache(apiErrorResponse(result.failure === 'timeout' ? 504 : 502, 'internal_error', result.message), 'BYPASS')
}

export function withCache(response: Response, status: CacheStatus): Response {
  response.headers.set('x-cache', status)
  return response
}

/** The headers kept with a cached entry: content type only (rate-limit headers describe a moment, not the data). */
export function storableHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {}
  const type = headers.get('content-type')
  if (type) out['content-type'] = type
  return out
}

/**
 * Where a redirect may point: an absolute http(s) URL or a path on this host. Anything else (another
 * scheme, or `//host` and `/\host`, which browsers read as another host) is not passed on.
 */
function isPassableLocation(value: string): boolean {
  if (value.startsWith('/')) return value[1] !== '/' && value[1] !== '\\'
  try {
    const { protocol } = new URL(value)
    return protocol === 'http:' || protocol === 'https:'
  } catch {
    return false
  }
}

/**
 * The PASS_HEADERS of an upstream answer, and on a 3xx its Location as sent: requests go out with
 * redirect: 'manual', so the caller has to follow the redirect itself and needs to know where to.
 */
export function passHeaders(from: Headers, status: number, to: Headers = new Headers(), names: readonly string[] = PASS_HEADERS): Headers {
  for (const name of names) {
    const value = from.get(name)
    if (value !== null) to.set(name, value)
  }
  if (status >= 300 && status < 400) {
    const location = from.get('location')
    if (location !== null && isPassableLocation(location)) to.set('location', location)
  }
  return to
}

export function isRateLimitHeader(name: string): boolean {
  return RATE_LIMIT_HEADERS.has(name.toLowerCase())
}
