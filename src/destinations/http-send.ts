import http from 'node:http'
import https from 'node:https'
import { performance } from 'node:perf_hooks'
import type { Clock } from '../utils/clock.ts'
import { BlockedAddressError, checkLiteralHost, guardedLookup } from './address-guard.ts'

/** How much of a response is read at most; the rest is cut off (a sink cannot make us buffer it). */
export const MAX_RESPONSE_BYTES = 64 * 1024
/** How much of a response is kept with the attempt. */
export const KEPT_RESPONSE_BYTES = 1024

export interface SendRequest {
  url: string
  body: string
  /** The attempt's headers; the content headers are added to this object. */
  headers: Record<string, string>
  /** Overall limit: connect, headers and body together (a slow-loris sink is cut off here). */
  timeoutMs: number
  allowPrivate: boolean
  allowHttp: boolean
  /** Redirect hops to follow (0: a redirect is a failed attempt). */
  followRedirects: number
  clock: Clock
  agents?: Agents
  /** Cuts the attempt short (shutdown); the result then has `aborted: true`. */
  cancel?: CancelGroup
}

/**
 * Cancels every attempt in flight at once (a lane's shutdown). One set of callbacks rather than an
 * AbortSignal listener per request: cheaper on the hot path, and no listener-count warnings at high
 * concurrency.
 */
export interface CancelGroup {
  readonly cancelled: boolean
  /** Registers `cancel`; returns its removal. Called at once if the group is already cancelled. */
  add(cancel: () => void): () => void
  cancelAll(): void
}

export function createCancelGroup(): CancelGroup {
  const callbacks = new Set<() => void>()
  let cancelled = false
  return {
    get cancelled() {
      return cancelled
    },
    add(cancel) {
      if (cancelled) cancel()
      else callbacks.add(cancel)
      return () => callbacks.delete(cancel)
    },
    cancelAll() {
      cancelled = true
      for (const cancel of callbacks) cancel()
      callbacks.clear()
    },
  }
}

export interface SendResult {
  /** The final HTTP status, or null when no answer came. */
  status: number | null
  latencyMs: number
  /** Why the attempt failed without a status (timeout, refused, blocked address, redirect refused). */
  error?: string
  /** The first KB of the response body. */
  response: string
  retryAfter?: string
  /** The address was refused by the private-address guard. */
  blocked?: boolean
  /** Cut short by `signal` (shutdown): not an answer from the destination. */
  aborted?: boolean
}

export interface Agents {
  http: http.Agent
  https: https.Agent
  close(): void
}

/** Keep-alive agents per destination: reused connections are most of forwarding's throughput. */
export function createAgents(maxSockets: number, allowPrivate: boolean): Agents {
  const lookup = guardedLookup(allowPrivate)
  const httpAgent = new http.Agent({ keepAlive: true, maxSockets, lookup } as http.AgentOptions)
  const httpsAgent = new https.Agent({ keepAlive: true, maxSockets, lookup } as https.AgentOptions)
  return {
    http: httpAgent,
    https: httpsAgent,
    close() {
      httpAgent.destroy()
      httpsAgent.destroy()
    },
  }
}

/** The first value of a response header (Node gives arrays for repeated ones). */
function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value
}

/** Stops an attempt: the first reason given wins, and the request on the wire is destroyed. */
function cutAttempt(attempt: Attempt, why: 'timeout' | 'cancelled'): void {
  attempt.cut ??= why
  attempt.request?.destroy(new Error(why))
}

interface HopResult {
  status: number | null
  error?: string
  response: string
  retryAfter?: string
  location?: string
  blocked?: boolean
}

/** One attempt's state shared by its hops: the request on the wire, and why it was cut (if it was). */
interface Attempt {
  request?: http.ClientRequest
  cut?: 'timeout' | 'cancelled'
}

/**
 * Per-attempt helpers are methods of small objects, and results are built field by field: under tsx
 * (esbuild's keepNames) every named arrow made per delivery costs an Object.defineProperty of its name, and
 * V8 builds `{ a, ...(x ? { b } : {}) }` far slower than an object given its fields one by one.
 */
function hop(url: URL, request: SendRequest, attempt: Attempt): Promise<HopResult> {
  return new Promise((resolve) => {
    let settled = false
    const once = {
      done(result: HopResult) {
        if (settled) return
        settled = true
        resolve(result)
      },
      timedOut() {
        return attempt.cut === 'timeout'
      },
    }
    const done = once.done
    const timedOut = once.timedOut
    try {
      if (url.protocol !== 'https:' && !(url.protocol === 'http:' && request.allowHttp)) {
        return done({ status: null, error: `refused ${url.protocol}// URL (https required)`, response: '' })
      }
      checkLiteralHost(url.hostname, request.allowPrivate)
    } catch (error) {
      return done({ status: null, error: (error as Error).message, response: '', blocked: error instanceof BlockedAddressError })
    }
    const isHttps = url.protocol === 'https:'
    const body = Buffer.from(request.body)
    const headers = request.headers
    headers['content-type'] = 'application/json'
    headers['content-length'] = String(body.length)
    headers['user-agent'] = 'switchboard-destinations/1'
    // The agents resolve through the guarded lookup themselves; a lone request is given it.
    const options: http.RequestOptions = request.agents
      ? { method: 'POST', headers, agent: isHttps ? request.agents.https : request.agents.http }
      : { method: 'POST', headers, lookup: guardedLookup(request.allowPrivate) }
    // Once a status line arrived it is the answer, even if the body is then cut off by the deadline.
    let finishResponse: ((error?: string) => void) | undefined
    const req = (isHttps ? https : http).request(url, options, (res) => {
      const status = res.statusCode ?? 0
      const chunks: Buffer[] = []
      let size = 0
      const response = {
        finish(error?: string) {
          const result: HopResult = { status, response: Buffer.concat(chunks).subarray(0, KEPT_RESPONSE_BYTES).toString('utf8') }
          if (error) result.error = error
          const retryAfter = firstHeader(res.headers['retry-after'])
          if (retryAfter) result.retryAfter = retryAfter
          const location = firstHeader(res.headers.location)
          if (location) result.location = location
          done(result)
        },
      }
      const finish = response.finish
      finishResponse = finish
      res.on('data', (chunk: Buffer) => {
        size += chunk.length
        if (chunks.reduce((n, c) => n + c.length, 0) < KEPT_RESPONSE_BYTES) chunks.push(chunk)
        if (size > MAX_RESPONSE_BYTES) {
          // Enough: the status is the answer; a huge body is not read (nor kept alive).
          res.destroy()
          finish(`response body over ${MAX_RESPONSE_BYTES} bytes; cut off`)
        }
      })
      res.on('end', () => finish())
      res.on('error', () => finish(timedOut() ? `timed out reading the response after ${request.timeoutMs} ms` : 'response interrupted'))
      res.on('close', () => finish(timedOut() ? `timed out reading the response after ${request.timeoutMs} ms` : undefined))
    })
    req.on('error', (error: Error & { code?: string }) => {
      if (finishResponse) return finishResponse(timedOut() ? `timed out reading the response after ${request.timeoutMs} ms` : 'response interrupted')
      if (attempt.cut) return done({ status: null, error: attempt.cut === 'timeout' ? `timed out after ${request.timeoutMs} ms` : 'cancelled', response: '' })
      done({ status: null, error: error.message || error.code || 'request failed', response: '', blocked: error instanceof BlockedAddressError })
    })
    attempt.request = req
    // Cut before this hop started (a timeout during the previous hop's redirect, or shutdown).
    if (attempt.cut) req.destroy(new Error(attempt.cut))
    else req.end(body)
  })
}

/**
 * One delivery attempt: POST the signed body, no redirects unless allowed (each hop re-checked), one
 * overall deadline on the injected clock, response read up to a limit. Never throws.
 */
export async function sendOnce(request: SendRequest): Promise<SendResult> {
  const started = performance.now()
  const attempt: Attempt = {}
  const cuts = {
    timeout() {
      cutAttempt(attempt, 'timeout')
    },
    cancelled() {
      cutAttempt(attempt, 'cancelled')
    },
  }
  const cancelTimer = request.clock.setTimeout(cuts.timeout, request.timeoutMs)
  const leaveGroup = request.cancel?.add(cuts.cancelled)
  try {
    let url: URL
    try {
      url = new URL(request.url)
    } catch {
      return { status: null, latencyMs: 0, error: 'invalid URL', response: '' }
    }
    for (let hops = 0; ; hops++) {
      const result = await hop(url, request, attempt)
      const redirect = result.status !== null && result.status >= 300 && result.status < 400
      if (!redirect || !result.location || hops >= request.followRedirects) {
        const latencyMs = Math.round(performance.now() - started)
        const error = result.error ?? (redirect ? `redirect to ${result.location ?? '(no location)'} not followed` : undefined)
        const sent: SendResult = { status: result.status, latencyMs, response: result.response }
        if (error) sent.error = error
        if (result.retryAfter) sent.retryAfter = result.retryAfter
        if (result.blocked) sent.blocked = true
        if (attempt.cut === 'cancelled') sent.aborted = true
        return sent
      }
      url = new URL(result.location, url)
    }
  } finally {
    cancelTimer()
    leaveGroup?.()
  }
}
