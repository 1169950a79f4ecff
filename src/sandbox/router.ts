import { apiErrorResponse } from '../upstream/api-error.ts'
import { sleep, type Clock } from '../utils/clock.ts'
import type { Logger } from '../utils/logger.ts'
import type { ApiHandler, SandboxContext } from './context.ts'
import { ApiFailure } from './errors.ts'
import type { FaultInjector } from './faults.ts'
import { createBatch, getBatch, getBatchMetrics, listBatches } from './handlers/batches.ts'
import { createCall } from './handlers/call.ts'
import { getConversation, getRecording, listConversations } from './handlers/conversations.ts'
import { createTranscriptionJob, getTranscriptionJob } from './handlers/transcription.ts'
import { createKeyRateLimiter, isoWithOffset } from './rate-limit.ts'

interface Route {
  method: 'GET' | 'POST'
  segments: string[]
  handler: ApiHandler
}

const route = (method: Route['method'], path: string, handler: ApiHandler): Route => ({
  method,
  segments: path.split('/').filter(Boolean),
  handler,
})

/** Every endpoint of spec/voice-api.md. */
export const ROUTES: Route[] = [
  route('POST', '/v1/call', createCall),
  route('POST', '/v1/batch-call', createBatch),
  route('GET', '/v1/batch-calls', listBatches),
  route('GET', '/v1/batch-calls/:id', getBatch),
  route('GET', '/v1/batch-calls/:id/metrics', getBatchMetrics),
  route('GET', '/v1/conversations', listConversations),
  route('GET', '/v1/conversations/:id', getConversation),
  route('GET', '/v1/conversations/:id/recording', getRecording),
  route('POST', '/v1/transcription/jobs', createTranscriptionJob),
  route('GET', '/v1/transcription/jobs/:id', getTranscriptionJob),
]

function match(path: string): Array<{ route: Route; params: Record<string, string> }> | undefined {
  const parts = path.split('/').filter(Boolean)
  const found: Array<{ route: Route; params: Record<string, string> }> = []
  for (const r of ROUTES) {
    if (r.segments.length !== parts.length) continue
    const params: Record<string, string> = {}
    let ok = true
    for (let i = 0; i < parts.length && ok; i++) {
      const seg = r.segments[i]!
      if (seg.startsWith(':')) {
        try {
          params[seg.slice(1)] = decodeURIComponent(parts[i]!)
        } catch {
          ok = false
        }
      } else ok = seg === parts[i]
    }
    if (ok) found.push({ route: r, params })
  }
  return found.length ? found : undefined
}

export interface RouterOptions {
  ctx: SandboxContext
  clock: Clock
  log: Logger
  rateLimit: number
  faults: FaultInjector
  publicBaseUrl?: (() => string) | undefined
  /** Told each request's public base (the default recording URL base for webhooks). */
  onBase(base: string): void
}

const BEARER = /^Bearer\s+(\S+)\s*$/i

/**
 * The sandbox's front door, in the provider's order: latency, auth (401), per-key rate limit (429 with
 * X-RateLimit-* on every authenticated answer), injected 500s before any side effect, routing, handler.
 * `base` is the path the sandbox is mounted under ('' standalone, '/sandbox' inside switchboard).
 */
export function createRouter(options: RouterOptions) {
  const { ctx, clock, log, faults } = options
  const limiter = createKeyRateLimiter(options.rateLimit)
  const requests = { total: 0, byStatus: new Map<number, number>() }

  async function dispatch(request: Request, base: string): Promise<Response> {
    if (faults.faults.latencyMs > 0) await sleep(clock, faults.faults.latencyMs)
    const url = new URL(request.url)
    let path = url.pathname.startsWith(base) ? url.pathname.slice(base.length) : url.pathname
    if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1)
    const method = request.method === 'HEAD' ? 'GET' : request.method
    if (!/^\/v1(\/|$)/.test(path)) return apiErrorResponse(404, 'not_found', `no such endpoint: ${request.method} ${url.pathname}`)

    const key = BEARER.exec(request.headers.get('authorization') ?? '')?.[1]
    const tenant = key ? ctx.state.tenantByKey(key) : undefined
    if (!key || !tenant || tenant.disabled) return apiErrorResponse(401, 'authentication_error', 'invalid or missing api key')

    const now = clock.now()
    const window = limiter.hit(key, now)
    const rateHeaders: Record<string, string> = {
      // The sandbox's own clock (the system's, or a test's manual one), as a provider's Date and its reset share one.
      date: new Date(now).toUTCString(),
      'x-ratelimit-limit': String(window.limit),
      'x-ratelimit-remaining': String(window.remaining),
      'x-ratelimit-reset': isoWithOffset(window.resetAt),
    }
    const fail = (f: ApiFailure) => apiErrorResponse(f.status, f.type, f.message, { extra: f.extra, headers: { ...rateHeaders, ...f.headers } })
    if (!window.allowed) {
      const retryAfter = Math.max(1, Math.ceil((window.resetAt - now) / 1000))
      return fail(new ApiFailure(429, 'rate_limit_exceeded', 'rate limit exceeded', {}, { 'retry-after': String(retryAfter) }))
    }
    if (faults.shouldFail()) return fail(new ApiFailure(500, 'internal_error', 'internal server error (injected by SANDBOX_FAULTS)'))

    const candidates = match(path)
    if (!candidates) return fail(new ApiFailure(404, 'not_found', `no such endpoint: ${request.method} ${url.pathname}`))
    const found = candidates.find((c) => c.route.method === method)
    if (!found) {
      // HEAD is answered wherever GET is (as GET, above), so it is allowed there (RFC 9110 §15.5.6).
      const allowed = [...new Set(candidates.flatMap((c) => (c.route.method === 'GET' ? ['GET', 'HEAD'] : [c.route.method])))].join(', ')
      return fail(new ApiFailure(405, 'invalid_request', `method ${request.method} is not allowed on ${path} (use ${allowed})`, {}, { allow: allowed }))
    }
    const publicBase = `${url.origin}${base}`
    options.onBase(options.publicBaseUrl?.() ?? publicBase)
    try {
      const response = await found.route.handler(ctx, {
        req: request,
        url,
        params: found.params,
        tenant,
        baseUrl: options.publicBaseUrl?.() ?? publicBase,
      })
      // Carried out, and its answer lost on the way (a gateway's 500 after the provider placed the call): a retry with the
      // same idempotency key then meets the call it created (409), as with the real provider.
      if (response.ok && faults.shouldFailAfter()) return fail(new ApiFailure(500, 'internal_error', 'internal server error after the request was carried out (injected by SANDBOX_FAULTS)'))
      for (const [k, v] of Object.entries(rateHeaders)) response.headers.set(k, v)
      return response
    } catch (error) {
      if (error instanceof ApiFailure) return fail(error)
      // The client went away while its body was read (a timeout, a stopped process): nothing failed here, and
      // nobody reads the answer. Under a burst of calls that time out these were error lines, one per request.
      if (request.signal.aborted || (error as { name?: string } | null)?.name === 'AbortError') {
        log.debug({ path }, 'sandbox request aborted by its client')
        return fail(new ApiFailure(400, 'invalid_request', 'the request was aborted before its body was read'))
      }
      log.error({ err: error, path }, 'sandbox handler failed')
      return fail(new ApiFailure(500, 'internal_error', 'internal server error'))
    }
  }

  return {
    async handle(request: Request, base: string): Promise<Response> {
      const response = await dispatch(request, base)
      requests.total++
      requests.byStatus.set(response.status, (requests.byStatus.get(response.status) ?? 0) + 1)
      return response
    },
    requests,
  }
}
