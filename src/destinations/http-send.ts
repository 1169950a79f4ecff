import { performance } from 'node:perf_hooks'
import { Agent, type Dispatcher } from 'undici'
import type { Clock } from '../utils/clock.ts'
import { BlockedAddressError, checkLiteralHost, guardedLookup } from './address-guard.ts'
import { basicAuthOf } from '../utils/shown-url.ts'
import { withoutEchoedSecrets } from './echoed-secrets.ts'
import { shownLocation } from './shown-location.ts'
import { storableText } from '../db/storable-text.ts'

/** How much of a response is read at most; the rest is cut off (a sink cannot make us buffer it). */
export const MAX_RESPONSE_BYTES = 64 * 1024
/** How much of a response is kept with the attempt. */
export const KEPT_RESPONSE_BYTES = 1024
/**
 * How much of a response is searched for the secrets sent with the request before it is cut to KEPT_RESPONSE_BYTES:
 * cut first, a secret that crossed the cut was no longer found, and its first part was kept in clear.
 */
const SEARCHED_RESPONSE_BYTES = KEPT_RESPONSE_BYTES + 16 * 1024

export interface SendRequest {
  url: string
  body: string
  /** The attempt's headers; the content headers are added to this object. A hop to another origin gets only the signature headers. */
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
  /** The first KB of the response body, as storable text (src/destinations/storable-text.ts). */
  response: string
  retryAfter?: string
  /** The answer's `Date`, beside a `Retry-After`: a date there is on the destination's clock. */
  date?: string
  /** The address was refused by the private-address guard. */
  blocked?: boolean
  /** Cut short by `signal` (shutdown): not an answer from the destination. */
  aborted?: boolean
}

export interface Agents {
  dispatcher: Dispatcher
  close(): Promise<void>
}

/**
 * Keep-alive connections per destination, at most `maxConnections` per origin, each resolved through the
 * guarded lookup (a name that resolves to a private address is refused at connect time, redirects too).
 * undici rather than node:http: the same request costs about a third less CPU, and reused connections are
 * most of forwarding's throughput.
 */
export function createAgents(maxConnections: number, allowPrivate: boolean): Agents {
  // undici's default idle timeout (4 s, or the server's Keep-Alive hint less 1 s) stays: a longer one races
  // servers that close idle connections without saying when.
  const dispatcher = new Agent({ connections: maxConnections, connect: { lookup: guardedLookup(allowPrivate) } })
  return {
    dispatcher,
    async close() {
      await dispatcher.destroy()
    },
  }
}

/** The first value of a response header (repeated ones come as arrays). */
function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value
}

/** Stops an attempt: the first reason given wins; the exchange in flight settles at once and is aborted. */
function cutAttempt(attempt: Attempt, why: 'timeout' | 'cancelled'): void {
  if (attempt.cut) return
  attempt.cut = why
  attempt.exchange?.cut()
}

interface HopResult {
  status: number | null
  error?: string
  response: string
  retryAfter?: string
  date?: string
  location?: string
  blocked?: boolean
}

/** One attempt's state shared by its hops: why it was cut (if it was), and the exchange in flight. */
interface Attempt {
  cut?: 'timeout' | 'cancelled'
  exchange?: { cut(): void }
}

function failure(attempt: Attempt, request: SendRequest, error: unknown): HopResult {
  if (attempt.cut) return { status: null, error: attempt.cut === 'timeout' ? `timed out after ${request.timeoutMs} ms` : 'cancelled', response: '' }
  // A connect-time refusal by the guarded lookup reaches us as the lookup's own error.
  if (error instanceof BlockedAddressError) return { status: null, error: error.message, response: '', blocked: true }
  const e = error as (Error & { code?: string }) | undefined
  return { status: null, error: e?.message || e?.code || 'request failed', response: '' }
}

/**
 * One POST through undici's dispatch interface: the answer's status and the headers we use, at most
 * MAX_RESPONSE_BYTES of its body read (the first KEPT_RESPONSE_BYTES kept). Settles once and never rejects: at
 * the end of the body, on an error, or as soon as the attempt is cut (the exchange is then aborted, or refused
 * when undici starts it). Once a status line has arrived it is the answer, even if the body is then cut off.
 * A handler rather than `dispatcher.request()`: no response stream, async resource or signal listener per
 * delivery — most answers are an empty 2xx. A class, as undici's own handlers are: its callbacks live on the
 * prototype, one object per attempt instead of a closure per callback.
 */
class Exchange {
  private controller: Dispatcher.DispatchController | undefined = undefined
  private settled = false
  private result: HopResult | undefined = undefined
  private chunks: Buffer[] | undefined = undefined
  private kept = 0
  private size = 0

  constructor(
    private readonly attempt: Attempt,
    private readonly request: SendRequest,
    private readonly resolve: (result: HopResult) => void,
  ) {}

  private settle(answer: HopResult): void {
    if (this.settled) return
    this.settled = true
    this.attempt.exchange = undefined
    this.resolve(answer)
  }

  private answered(error?: string): void {
    if (this.settled) return
    const answer = this.result!
    // Kept as text the database can store: a binary answer's NUL bytes would make Postgres refuse the attempt's row.
    if (this.chunks) answer.response = storableText(Buffer.concat(this.chunks).subarray(0, SEARCHED_RESPONSE_BYTES).toString('utf8'))
    if (error) answer.error = error
    this.settle(answer)
  }

  private interrupted(): string {
    return this.attempt.cut === 'timeout' ? `timed out reading the response after ${this.request.timeoutMs} ms` : 'response interrupted'
  }

  /** The attempt was cut (deadline, shutdown): settle now, and stop the exchange if it started. */
  cut(): void {
    if (this.result) this.answered(this.interrupted())
    else this.settle(failure(this.attempt, this.request, undefined))
    this.controller?.abort(new Error(this.attempt.cut))
  }

  /** A dispatch that throws before it starts. */
  refused(error: unknown): void {
    this.settle(failure(this.attempt, this.request, error))
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller
    if (this.settled) controller.abort(new Error(this.attempt.cut ?? 'settled'))
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    // 1xx answers are informational: the final status follows.
    if (statusCode < 200) return
    const answer: HopResult = { status: statusCode, response: '' }
    const retryAfter = firstHeader(headers['retry-after'])
    if (retryAfter) {
      answer.retryAfter = retryAfter
      const date = firstHeader(headers.date)
      if (date) answer.date = date
    }
    const location = firstHeader(headers.location)
    if (location) answer.location = location
    this.result = answer
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.size += chunk.length
    if (this.kept < SEARCHED_RESPONSE_BYTES) {
      ;(this.chunks ??= []).push(chunk)
      this.kept += chunk.length
    }
    if (this.size > MAX_RESPONSE_BYTES && !this.settled) {
      // Enough: the status is the answer; a huge body is not read (nor its connection kept).
      this.answered(`response body over ${MAX_RESPONSE_BYTES} bytes; cut off`)
      controller.abort(new Error('response too large'))
    }
  }

  onResponseEnd(): void {
    if (this.settled) return
    if (this.result) this.answered()
    else this.settle({ status: null, error: 'no response', response: '' })
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.settled) return
    if (this.result) this.answered(this.interrupted())
    else this.settle(failure(this.attempt, this.request, error))
  }
}

function exchange(dispatcher: Dispatcher, target: Target, headers: Record<string, string>, request: SendRequest, attempt: Attempt): Promise<HopResult> {
  return new Promise((resolve) => {
    const handler = new Exchange(attempt, request, resolve)
    attempt.exchange = handler
    try {
      dispatcher.dispatch({ origin: target.origin, path: target.path, method: 'POST', headers, body: request.body }, handler)
    } catch (error) {
      handler.refused(error)
    }
  })
}

/** What each attempt needs of a destination URL, read once per URL: a lane posts to the same one thousands of times. */
interface Target {
  url: URL
  protocol: string
  hostname: string
  origin: string
  path: string
  auth: string | undefined
}

const targets = new Map<string, Target>()
/** Destinations are a handful of URLs; a bound all the same (redirect targets come from the network). */
const MAX_TARGETS = 256

function targetOf(url: URL): Target {
  const known = targets.get(url.href)
  if (known) return known
  const target: Target = { url, protocol: url.protocol, hostname: url.hostname, origin: url.origin, path: url.pathname + url.search, auth: basicAuthOf(url) }
  if (targets.size >= MAX_TARGETS) targets.clear()
  targets.set(url.href, target)
  return target
}

/** A URL string parsed once (see targetOf); throws on an invalid one. */
function parsedTarget(href: string): Target {
  return targets.get(href) ?? targetOf(new URL(href))
}

/**
 * One hop of an attempt: the checks, the POST, the answer. Results are built field by field: V8 builds
 * `{ a, ...(x ? { b } : {}) }` far slower than an object given its fields one by one.
 */
async function hop(target: Target, headers: Record<string, string>, request: SendRequest, attempt: Attempt, dispatcher: Dispatcher): Promise<HopResult> {
  const refused = refusal(target, request)
  if (refused) return { status: null, error: refused.scheme ? `refused ${target.protocol}// URL (${refused.scheme})` : refused.message, response: '', blocked: refused.blocked }
  if (attempt.cut) return failure(attempt, request, undefined)
  headers['content-type'] = 'application/json'
  // The destination's own (its configured headers are lowercase) wins.
  headers['user-agent'] ??= 'switchboard-destinations/1'
  // Credentials in the URL go out as Basic auth (as node:http did), unless the destination's own headers set one.
  const auth = target.auth
  if (auth && !Object.keys(headers).some((name) => name.toLowerCase() === 'authorization')) headers.authorization = auth
  return exchange(dispatcher, target, headers, request, attempt)
}

/**
 * Why an address may not be posted to, checked before each hop: a scheme other than https (http with allowHttp), or a
 * private address without ALLOW_PRIVATE_DESTINATIONS (`blocked`). Undefined when it may.
 */
function refusal(target: Target, request: SendRequest): { message: string; scheme?: string; blocked?: boolean } | undefined {
  if (target.protocol !== 'https:' && !(target.protocol === 'http:' && request.allowHttp)) {
    const scheme = target.protocol === 'http:' ? 'https required' : 'not an http(s) URL'
    return { message: target.protocol === 'http:' ? `${scheme} (set allowHttp: true to allow plain http)` : scheme, scheme }
  }
  try {
    checkLiteralHost(target.hostname, request.allowPrivate)
  } catch (error) {
    return { message: (error as Error).message, blocked: error instanceof BlockedAddressError }
  }
  return undefined
}

/** The signature headers: an HMAC of this body, useless for anything else, so they may go to any origin. */
const SIGNATURE_HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const

/**
 * The headers for a hop to another origin (scheme, host or port): the signature only. The attempt's headers
 * also hold the Basic auth from the URL and the destination's own `headers` (API keys, as a rule), meant for
 * the origin configured; a redirect must not hand them to whoever it names — as fetch drops Authorization on
 * a cross-origin redirect. A list of what is kept rather than of what is dropped: a configured header may be
 * called anything.
 */
function crossOriginHeaders(headers: Record<string, string>): Record<string, string> {
  const kept: Record<string, string> = {}
  for (const name of SIGNATURE_HEADERS) {
    const value = headers[name]
    if (value !== undefined) kept[name] = value
  }
  return kept
}

/** An answer as kept with its attempt: without the secrets sent with it, then cut to KEPT_RESPONSE_BYTES (in that order). */
function keptAnswer(response: string, headers: Readonly<Record<string, string>>, urls: readonly string[]): string {
  const shown = withoutEchoedSecrets(response, headers, urls)
  // A quarter as many characters are at most KEPT_RESPONSE_BYTES in UTF-8: no need to count them.
  return shown.length <= KEPT_RESPONSE_BYTES / 4 ? shown : Buffer.from(shown, 'utf8').subarray(0, KEPT_RESPONSE_BYTES).toString('utf8')
}

/**
 * One delivery attempt: POST the signed body, no redirects unless allowed (each hop re-checked), one
 * overall deadline on the injected clock, response read up to a limit. Never throws.
 */
export async function sendOnce(request: SendRequest): Promise<SendResult> {
  const started = performance.now()
  const attempt: Attempt = {}
  let late: NodeJS.Immediate | undefined
  const cuts = {
    // After the event loop's next look at the sockets: a process frozen past the deadline runs its due timers first,
    // and an answer that arrived meanwhile would count as a timeout (and the delivery be sent again).
    timeout() {
      late = setImmediate(() => cutAttempt(attempt, 'timeout'))
    },
    cancelled() {
      cutAttempt(attempt, 'cancelled')
    },
  }
  const cancelTimer = request.clock.setTimeout(cuts.timeout, request.timeoutMs)
  const leaveGroup = request.cancel?.add(cuts.cancelled)
  // A lone attempt (`destinations test`) gets connections of its own, closed when it is done.
  const agents = request.agents ?? createAgents(1, request.allowPrivate)
  const dispatcher = agents.dispatcher
  try {
    let target: Target
    try {
      target = parsedTarget(request.url)
    } catch {
      return { status: null, latencyMs: 0, error: 'invalid URL', response: '' }
    }
    let headers = request.headers
    for (let hops = 0; ; hops++) {
      const result = await hop(target, headers, request, attempt, dispatcher)
      const redirect = result.status !== null && result.status >= 300 && result.status < 400
      if (!redirect || !result.location || hops >= request.followRedirects) {
        const latencyMs = Math.round(performance.now() - started)
        const error = result.error ?? (redirect ? `redirect to ${result.location ? shownLocation(result.location, target.url) : '(no location)'} not followed` : undefined)
        const sent: SendResult = { status: result.status, latencyMs, response: keptAnswer(result.response, headers, [request.url, target.url.href]) }
        if (error) sent.error = error
        if (result.retryAfter) sent.retryAfter = result.retryAfter
        if (result.date) sent.date = result.date
        if (result.blocked) sent.blocked = true
        if (attempt.cut === 'cancelled') sent.aborted = true
        return sent
      }
      let next: Target
      try {
        next = targetOf(new URL(result.location, target.url))
      } catch {
        return { status: result.status, latencyMs: Math.round(performance.now() - started), error: `redirect to an invalid URL: ${shownLocation(result.location, target.url)}`, response: keptAnswer(result.response, headers, [request.url, target.url.href]) }
      }
      // A hop refused is the redirect's doing, not the configuration's: named as the redirect, with its status.
      const refused = refusal(next, request)
      if (refused) {
        const sent: SendResult = { status: result.status, latencyMs: Math.round(performance.now() - started), error: `redirect to ${shownLocation(result.location, target.url)} refused: ${refused.message}`, response: keptAnswer(result.response, headers, [request.url, target.url.href]) }
        if (refused.blocked) sent.blocked = true
        return sent
      }
      // Once dropped they stay dropped, even if a later hop comes back to the first origin (as fetch does).
      if (next.origin !== target.origin) headers = crossOriginHeaders(headers)
      target = next
    }
  } finally {
    cancelTimer()
    if (late) clearImmediate(late)
    leaveGroup?.()
    if (agents !== request.agents) await agents.close()
  }
}
