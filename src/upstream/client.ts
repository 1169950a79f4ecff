import { ofetch, type FetchResponse } from 'ofetch'
import type { z } from 'zod'
import { REGION_BASE_URLS } from './regions.ts'
import { systemClock, sleep, type Clock } from '../utils/clock.ts'
import { systemRandom, type Random } from '../utils/random.ts'
import { VoiceApiError, errorFromResponse, readRateLimit, type RateLimitInfo } from './errors.ts'
import { defaultRetryPolicy, isTransient, retryDelay, type RetryPolicy } from './retry.ts'
import { readCallAnswer } from './call-answer.ts'
import { checkArgument } from '../utils/argument-error.ts'
import {
  batchCallSchema,
  batchListSchema,
  batchMetricsSchema,
  callRequestSchema,
  recipeCallRequestSchema,
  CALL_REQUEST_KEYS,
  conversationDetailSchema,
  conversationListSchema,
  dataEnvelope,
  transcriptionJobSchema,
  type BatchCall,
  type BatchList,
  type BatchMetrics,
  type CallRequest,
  type CallResponse,
  type ConversationDetail,
  type ConversationList,
  type TranscriptionJob,
} from './schemas.ts'

/**
 * A call request checked before anything is sent: a mistake (`agent_id: 'x'`) is one line naming the method, the field
 * and what was passed, as the recipe helpers' mistakes are — not zod's multi-line issue list. The dry-run client checks
 * with it too (src/recipes/dry-run-client.ts), so a dry run refuses what the real run would.
 */
export function checkCallRequest(request: unknown, method: 'createCall' | 'createCallRaw'): CallRequest {
  return checkArgument(callRequestSchema, request, {
    fn: `client.${method}`,
    arg: 'request',
    expected: '{ agent_id: integer, parameters: [{ name, value }], … }',
  })
}

/**
 * A call request a recipe made (`ctx.client.createCall`), checked as `checkCallRequest` does and refusing what the spec
 * does not list, with the key it most likely meant: the proxy passes a caller's extra field on, but in a recipe one is a
 * misspelling (`schedule_for` placed the call at once, `retry_languag` went out as written).
 */
export function checkRecipeCallRequest(request: unknown, method: 'createCall' | 'createCallRaw'): CallRequest {
  return checkArgument(recipeCallRequestSchema, request, {
    fn: `client.${method}`,
    arg: 'request',
    expected: '{ agent_id: integer, parameters: [{ name, value }], … }',
    knownKeys: CALL_REQUEST_KEYS,
  })
}

/** `client` as a recipe's `ctx.client`: its call creations checked by `checkRecipeCallRequest` first. */
export function recipeClient(client: VoiceClient): VoiceClient {
  const overrides: Pick<VoiceClient, 'createCall' | 'createCallRaw'> = {
    createCall: (request) => client.createCall(checkRecipeCallRequest(request, 'createCall')),
    createCallRaw: (request) => client.createCallRaw(checkRecipeCallRequest(request, 'createCallRaw')),
  }
  // The client's other members (reads, its lastRateLimit getter) are its own, through the prototype.
  return Object.assign(Object.create(client) as VoiceClient, overrides)
}

export interface VoiceClientOptions {
  apiKey: string
  /** Base address without `/v1`. Overrides `region`. */
  baseUrl?: string
  region?: keyof typeof REGION_BASE_URLS
  /** Per attempt. */
  timeoutMs?: number
  /**
   * The whole request, retries included, measured on `clock`: each attempt's deadline is cut to what is left,
   * and no retry starts (nor backoff is waited) past it; the last attempt's error is then thrown. Unset: only
   * `timeoutMs` per attempt and the retry policy bound it (4 attempts × 15 s and the backoff, about a minute).
   */
  budgetMs?: number
  retry?: Partial<RetryPolicy>
  /**
   * Call creation is retried only with an idempotency key. 'auto' (default) adds a UUID key when the
   * request has none, so a retried call can never be placed twice; 'never' leaves requests as they are.
   * A retry answered 409 duplicate_request after an attempt without a readable answer rejects with
   * `placedEarlier: true` (see `createCall`).
   */
  idempotency?: 'auto' | 'never'
  clock?: Clock
  random?: Random
  /** Observe retries (logging, metrics). */
  onRetry?: (info: { method: string; path: string; attempt: number; delayMs: number; error: VoiceApiError }) => void
  /**
   * Observe every attempt's outcome, retried or not (the runtime feeds /readyz's upstream entry with it). An
   * observer that throws does not fail the request.
   */
  onOutcome?: (outcome: AttemptOutcome) => void
  /** Extra headers on every request. */
  headers?: Record<string, string>
  /**
   * Stops the request under way and any retry still to come (a service stopping): the call then rejects with the
   * signal's reason, not a VoiceApiError.
   */
  signal?: AbortSignal
}

/** What one attempt got from the provider. */
export interface AttemptOutcome {
  method: string
  path: string
  /** The answer's HTTP status; 0 when no answer came (a timeout, a network error). */
  status: number
  /** Why no answer came, when `status` is 0. */
  error?: string
  /** From the request's start to its answer's headers (or to the failure). */
  seconds: number
}

/**
 * The provider's 2xx answer to a call creation: the call as far as its body could be read, and the body as
 * sent, for a caller (the proxy) that passes it on verbatim.
 */
export interface CallCreation {
  call: CallResponse
  status: number
  /** The answer's body, as sent. */
  body: string
  contentType: string | null
  /** What is off when the body is not the documented `{data: call}`; `call` then holds what could be read. */
  unexpectedShape: string | undefined
}

export interface ListQuery {
  agent_id?: number
  limit?: number
  offset?: number
}

/** A file to upload: bytes or text, with a name and media type. */
export interface UploadFile {
  data: Blob | Uint8Array | string
  filename?: string
  contentType?: string
}

export interface RecordingDownload {
  body: ReadableStream<Uint8Array>
  contentType: string
  contentLength: number | undefined
  headers: Headers
}

export interface VoiceClient {
  readonly baseUrl: string
  /** Rate-limit headers of the last response read. */
  readonly lastRateLimit: RateLimitInfo | undefined
  /**
   * Places (or schedules) one call. With an idempotency key (given, or added under `idempotency: 'auto'`) a
   * 5xx, timeout or network error is retried with the same key. Should a retry be answered 409
   * duplicate_request after such an attempt, the call exists — that attempt placed it and its answer was
   * lost — and this rejects with a VoiceApiError whose `placedEarlier` is true (type duplicate_request,
   * status 409, `cause` the lost attempt's error): the provider's 409 carries no call to return, and a
   * caller must not place the call again with a new key, which would call the person twice. Any other 409
   * (`placedEarlier` false) is the caller's own key used before. Every error carries the key (`idempotencyKey`),
   * and `mayHaveBeenPlaced` when an attempt's answer was lost and nothing later settled it (a 429 after a timeout,
   * say): retry such a call only with that key.
   */
  createCall(request: CallRequest): Promise<CallResponse>
  /**
   * `createCall` with the answer as sent. A 2xx means the provider accepted the call, so a body off the
   * documented shape is not an error (it was: the caller saw a failure for a placed call and, retrying with a
   * new key, placed it twice): `call` holds what the body has, missing fields null (`trace_id` ''), and
   * `unexpectedShape` says what is off.
   */
  createCallRaw(request: CallRequest): Promise<CallCreation>
  createBatch(input: { agent_id: number; name: string; file: UploadFile }): Promise<BatchCall>
  listBatches(query?: ListQuery): Promise<BatchList>
  getBatch(batchId: number): Promise<BatchCall>
  getBatchMetrics(batchId: number): Promise<BatchMetrics>
  listConversations(query?: ListQuery): Promise<ConversationList>
  getConversation(conversationId: string): Promise<ConversationDetail>
  downloadRecording(conversationId: string): Promise<RecordingDownload>
  createTranscriptionJob(input: {
    audio: UploadFile
    languages?: string
    diarize?: boolean
    format?: 'standard' | 'code_mixed'
  }): Promise<TranscriptionJob>
  getTranscriptionJob(jobId: string): Promise<TranscriptionJob>
}

function toBlob(file: UploadFile, fallbackType: string): Blob {
  const type = file.contentType ?? fallbackType
  if (file.data instanceof Blob) return file.data
  return new Blob([typeof file.data === 'string' ? file.data : new Uint8Array(file.data)], { type })
}

async function readErrorBody(stream: ReadableStream<Uint8Array> | undefined): Promise<unknown> {
  if (!stream) return undefined
  return jsonOrText(await new Response(stream).text().catch(() => ''))
}

function jsonOrText(text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

/** What an error raised under a failed request may carry: Node's system errors, undici's, an AggregateError. */
interface ErrorLike {
  code?: unknown
  syscall?: unknown
  errors?: unknown
  cause?: unknown
}

/** System calls that fail before any byte of a request is written: resolving the host's name, opening the connection. */
const BEFORE_SENDING_SYSCALLS: ReadonlySet<string> = new Set(['getaddrinfo', 'connect'])
/** Codes that say no connection was made, whatever call raised them (undici's connect timeout names none). */
const NOT_CONNECTED_CODES: ReadonlySet<string> = new Set(['UND_ERR_CONNECT_TIMEOUT'])

/** The first error in `cause`'s chain (ofetch's FetchError → undici's "fetch failed" → Node's) with a system code. */
function systemError(cause: unknown): (ErrorLike & { code: string }) | undefined {
  let current: unknown = cause
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth++) {
    const error = current as ErrorLike
    if (hasCode(error)) return error
    current = error.cause
  }
  return undefined
}

function hasCode(error: ErrorLike): error is ErrorLike & { code: string } {
  return typeof error.code === 'string'
}

/** Whether `error` failed before a connection existed; an AggregateError (each address of the host tried) when all its errors did. */
function failedBeforeSending(error: ErrorLike): boolean {
  if (Array.isArray(error.errors) && error.errors.length > 0) {
    return error.errors.every((each: unknown) => typeof each === 'object' && each !== null && failedBeforeSending(each as ErrorLike))
  }
  if (typeof error.code === 'string' && NOT_CONNECTED_CODES.has(error.code)) return true
  return typeof error.syscall === 'string' && BEFORE_SENDING_SYSCALLS.has(error.syscall)
}

/**
 * Why an attempt got no answer, as the network stack said: its code (ECONNREFUSED, ENOTFOUND, ECONNRESET,
 * UND_ERR_CONNECT_TIMEOUT, …) and whether the request provably never left — the name not resolved, the connection
 * refused or never made. A reset or a timeout on an open connection may come after the request was sent: not `unsent`.
 */
export function unansweredCause(cause: unknown): { networkCode: string | undefined; unsent: boolean } {
  const error = systemError(cause)
  if (!error) return { networkCode: undefined, unsent: false }
  return { networkCode: error.code, unsent: failedBeforeSending(error) }
}

/** `wait`, cut short when `signal` aborts (then it rejects with the signal's reason). */
async function untilAborted(wait: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return wait
  signal.throwIfAborted()
  let onAbort = () => {}
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
  })
  try {
    await Promise.race([wait, aborted])
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}

/**
 * One attempt's deadline: a signal that aborts with a TimeoutError after `ms`, or with the caller's reason when `outer`
 * aborts first. A referenced timer, not `AbortSignal.timeout`'s: a CLI command waiting on the provider must not see its
 * event loop empty meanwhile. A listener on `outer`, removed by `clear`, not `AbortSignal.any`: on Node 20 every
 * `any` leaves an entry on its sources that is never dropped, and a reconciliation pass hands one process-long signal
 * to thousands of requests (≈ 5 MB per 100,000 held for good).
 */
function attemptDeadline(ms: number, outer: AbortSignal | undefined): { signal: AbortSignal; clear(keepOuter?: boolean): void } {
  const controller = new AbortController()
  let late: NodeJS.Immediate | undefined
  // Aborted after the event loop's next look at the sockets, not at once: a process frozen past the deadline (a VM
  // paused, a laptop asleep) runs its due timers before it reads what arrived meanwhile, and an answer already in the
  // socket was thrown away as a timeout — for a call, placed but recorded without its trace id, then sent again.
  const timer = setTimeout(() => {
    late = setImmediate(() => {
      const error = new Error(`the operation was aborted after ${ms} ms`)
      error.name = 'TimeoutError'
      controller.abort(error)
    })
  }, ms)
  const onAbort = () => controller.abort(outer!.reason)
  outer?.addEventListener('abort', onAbort, { once: true })
  return {
    signal: controller.signal,
    // `keepOuter`: a streamed answer's body is still read after this, and the caller's signal still ends it.
    clear: (keepOuter = false) => {
      clearTimeout(timer)
      if (late) clearImmediate(late)
      if (!keepOuter) outer?.removeEventListener('abort', onAbort)
    },
  }
}

/** A typed client for the provider's 10 endpoints, with the spec's retry rules. */
export function createVoiceClient(options: VoiceClientOptions): VoiceClient {
  const baseUrl = (options.baseUrl ?? REGION_BASE_URLS[options.region ?? 'global']).replace(/\/+$/, '').replace(/\/v1$/, '')
  const clock = options.clock ?? systemClock
  const random = options.random ?? systemRandom
  const policy: RetryPolicy = { ...defaultRetryPolicy, ...options.retry }
  const timeout = options.timeoutMs ?? 15_000
  let lastRateLimit: RateLimitInfo | undefined

  interface Attempt {
    method: 'GET' | 'POST'
    path: string
    query?: Record<string, string | number | undefined>
    body?: () => unknown
    repeatable: boolean
    stream?: boolean
    /** Read the answer as text (kept verbatim); an error body is parsed from it. */
    text?: boolean
    /** Call creation's key: a 409 duplicate_request to a retry then speaks of an earlier attempt. */
    idempotencyKey?: string
  }

  function observe(outcome: AttemptOutcome): void {
    try {
      options.onOutcome?.(outcome)
    } catch {
      // Observation only: a broken observer must not turn a good answer into a failure.
    }
  }

  async function send(req: Attempt): Promise<FetchResponse<unknown>> {
    // The first attempt of this request whose outcome is unknown (it may have been carried out).
    let lost: VoiceApiError | undefined
    const started = clock.now()
    const left = () => (options.budgetMs === undefined ? Infinity : started + options.budgetMs - clock.now())
    for (let attempt = 1; ; attempt++) {
      let error: VoiceApiError
      // The attempt's deadline covers the answer's body too. ofetch's own `timeout` stops at the headers, so a
      // provider that sent them and then stalled held the request for undici's 300 s body timeout. A streamed
      // answer's body belongs to the caller (who reads it under its own idle deadline): its deadline ends with
      // the headers, or with the error body read here.
      const attemptMs = Math.max(1, Math.min(timeout, left()))
      options.signal?.throwIfAborted()
      const deadline = attemptDeadline(attemptMs, options.signal)
      const startedAt = performance.now()
      const took = () => (performance.now() - startedAt) / 1000
      let streaming = false
      try {
        const response = await ofetch.raw(`${baseUrl}${req.path}`, {
          method: req.method,
          query: req.query,
          body: req.body?.() as RequestInit['body'] | Record<string, unknown> | undefined,
          headers: { authorization: `Bearer ${options.apiKey}`, accept: 'application/json', ...options.headers },
          signal: deadline.signal,
          retry: 0,
          ignoreResponseError: true,
          responseType: req.stream ? 'stream' : req.text ? 'text' : 'json',
        })
        observe({ method: req.method, path: req.path, status: response.status, seconds: took() })
        lastRateLimit = readRateLimit(response.headers, clock.now())
        streaming = response.ok && req.stream === true
        if (response.ok) return response
        // A streamed request's error body is still a stream, a text one still text: read it so the error comes back typed.
        const body = req.stream
          ? await readErrorBody(response._data as ReadableStream<Uint8Array> | undefined)
          : req.text
            ? jsonOrText(typeof response._data === 'string' ? response._data : '')
            : response._data
        error = errorFromResponse(response.status, response.headers, body, clock.now())
      } catch (cause) {
        if (cause instanceof VoiceApiError) throw cause
        options.signal?.throwIfAborted()
        const name = (cause as { name?: string; cause?: { name?: string } }).name
        const timedOut = name === 'TimeoutError' || name === 'AbortError' || /timeout|aborted/i.test(String((cause as Error).message))
        const { networkCode, unsent } = unansweredCause(cause)
        const reason = String((cause as Error).message)
        error = new VoiceApiError({
          type: timedOut ? 'timeout' : 'network_error',
          status: 0,
          message: timedOut
            ? `no answer from ${baseUrl} within ${attemptMs} ms`
            : `cannot reach ${baseUrl}: ${reason}${networkCode && !reason.includes(networkCode) ? ` (${networkCode})` : ''}`,
          cause,
          networkCode,
          // Of the whole request, not this attempt: an earlier attempt whose answer was lost may have been carried out.
          neverSent: unsent && lost === undefined,
        })
        observe({ method: req.method, path: req.path, status: 0, error: error.message, seconds: took() })
      } finally {
        deadline.clear(streaming)
      }
      if (req.idempotencyKey !== undefined && lost && error.type === 'duplicate_request') throw placedEarlier(error, lost, req.idempotencyKey)
      // An attempt that never reached the provider cannot have carried anything out: it leaves nothing to settle.
      if (isTransient(error) && !error.neverSent) lost ??= error
      const delayMs = retryDelay({ error, attempt, repeatable: req.repeatable, policy, random, now: clock.now() })
      // Past the budget the caller is told now, with the last error, rather than after attempts it has given up on.
      if (delayMs === undefined || delayMs >= left()) throw req.idempotencyKey === undefined ? error : callError(error, lost, req.idempotencyKey)
      options.onRetry?.({ method: req.method, path: req.path, attempt, delayMs, error })
      await untilAborted(sleep(clock, delayMs), options.signal)
    }
  }

  /**
   * A call creation's final error, with the key its attempts used and whether one of them may have placed the call:
   * a 429 (or 400, or a budget spent) after an attempt whose answer was lost does not mean the call does not exist,
   * and a caller that retried it with a new key would call the person twice.
   */
  function callError(error: VoiceApiError, lostAttempt: VoiceApiError | undefined, key: string): VoiceApiError {
    const mayHaveBeenPlaced = lostAttempt !== undefined
    // A final timeout or 5xx already reads as "unknown"; a 429 or 4xx after a lost attempt would read as "not placed".
    const misleading = mayHaveBeenPlaced && !isTransient(error)
    return new VoiceApiError({
      type: error.type,
      status: error.status,
      message: misleading
        ? `${error.message} — but an earlier attempt got no answer (${lostAttempt.type}: ${lostAttempt.message}), so the call may have been placed: retry only with the same idempotency key (${key}), never a new one`
        : error.message,
      currentCalls: error.currentCalls,
      maxCalls: error.maxCalls,
      rateLimit: error.rateLimit,
      body: error.body,
      cause: lostAttempt !== undefined && lostAttempt !== error ? lostAttempt : error.cause,
      idempotencyKey: key,
      mayHaveBeenPlaced,
      networkCode: error.networkCode,
      neverSent: error.neverSent,
    })
  }

  /**
   * The 409 a retry gets when an earlier attempt with the same key went through: not "the key was used
   * before" (which a caller that never used the key could not act on) but "the call exists".
   */
  function placedEarlier(duplicate: VoiceApiError, lostAttempt: VoiceApiError, key: string): VoiceApiError {
    return new VoiceApiError({
      type: duplicate.type,
      status: duplicate.status,
      message:
        `the call was most likely placed by an earlier attempt whose answer was lost (${lostAttempt.type}: ${lostAttempt.message}): ` +
        `a retry with the same idempotency key (${key}) was answered 409 duplicate_request. Do not place it again with a new key — that would place a second call`,
      rateLimit: duplicate.rateLimit,
      body: duplicate.body,
      cause: lostAttempt,
      placedEarlier: true,
      idempotencyKey: key,
      mayHaveBeenPlaced: true,
    })
  }

  function parse<S extends z.ZodType>(schema: S, response: FetchResponse<unknown>): z.infer<S> {
    const parsed = schema.safeParse(response._data)
    if (!parsed.success) {
      throw new VoiceApiError({
        type: 'invalid_response',
        status: response.status,
        message: `unexpected response from ${baseUrl}: ${parsed.error.issues[0]?.path.join('.') ?? ''} ${parsed.error.issues[0]?.message ?? ''}`.trim(),
        body: response._data,
      })
    }
    return parsed.data
  }

  const enc = encodeURIComponent

  async function createCallRaw(request: CallRequest, method: 'createCall' | 'createCallRaw' = 'createCallRaw'): Promise<CallCreation> {
    const body = checkCallRequest(request, method)
    if (!body.idempotency_key && (options.idempotency ?? 'auto') === 'auto') body.idempotency_key = random.uuid()
    const key = body.idempotency_key || undefined
    const res = await send({ method: 'POST', path: '/v1/call', body: () => body, repeatable: key !== undefined, idempotencyKey: key, text: true })
    const text = typeof res._data === 'string' ? res._data : ''
    const { call, unexpectedShape } = readCallAnswer(jsonOrText(text), body)
    return { call, status: res.status, body: text, contentType: res.headers.get('content-type'), unexpectedShape }
  }

  return {
    baseUrl,
    get lastRateLimit() {
      return lastRateLimit
    },

    async createCall(request) {
      return (await createCallRaw(request, 'createCall')).call
    },

    createCallRaw: (request) => createCallRaw(request),

    async createBatch({ agent_id, name, file }) {
      const res = await send({
        method: 'POST',
        path: '/v1/batch-call',
        body: () => {
          const form = new FormData()
          form.set('agent_id', String(agent_id))
          form.set('name', name)
          form.set('file', toBlob(file, 'text/csv'), file.filename ?? 'batch.csv')
          return form
        },
        // No idempotency key exists for batches: a 5xx could mean the batch was created.
        repeatable: false,
      })
      return parse(dataEnvelope(batchCallSchema), res).data
    },

    async listBatches(query = {}) {
      const res = await send({ method: 'GET', path: '/v1/batch-calls', query: { ...query }, repeatable: true })
      return parse(batchListSchema, res)
    },

    async getBatch(batchId) {
      const res = await send({ method: 'GET', path: `/v1/batch-calls/${enc(String(batchId))}`, repeatable: true })
      return parse(dataEnvelope(batchCallSchema), res).data
    },

    async getBatchMetrics(batchId) {
      const res = await send({ method: 'GET', path: `/v1/batch-calls/${enc(String(batchId))}/metrics`, repeatable: true })
      return parse(dataEnvelope(batchMetricsSchema), res).data
    },

    async listConversations(query = {}) {
      const res = await send({ method: 'GET', path: '/v1/conversations', query: { ...query }, repeatable: true })
      return parse(conversationListSchema, res)
    },

    async getConversation(conversationId) {
      const res = await send({ method: 'GET', path: `/v1/conversations/${enc(conversationId)}`, repeatable: true })
      return parse(dataEnvelope(conversationDetailSchema), res).data
    },

    async downloadRecording(conversationId) {
      const res = await send({ method: 'GET', path: `/v1/conversations/${enc(conversationId)}/recording`, repeatable: true, stream: true })
      const length = res.headers.get('content-length')
      return {
        body: res._data as ReadableStream<Uint8Array>,
        contentType: res.headers.get('content-type') ?? 'application/octet-stream',
        contentLength: length === null ? undefined : Number(length),
        headers: res.headers,
      }
    },

    async createTranscriptionJob({ audio, languages, diarize, format }) {
      const res = await send({
        method: 'POST',
        path: '/v1/transcription/jobs',
        body: () => {
          const form = new FormData()
          form.set('audio', toBlob(audio, 'audio/wav'), audio.filename ?? 'audio.wav')
          if (languages !== undefined) form.set('languages', languages)
          if (diarize !== undefined) form.set('diarize', String(diarize))
          if (format !== undefined) form.set('format', format)
          return form
        },
        repeatable: false,
      })
      // Transcription jobs are not wrapped in {data} (provider-notes).
      return parse(transcriptionJobSchema, res)
    },

    async getTranscriptionJob(jobId) {
      const res = await send({ method: 'GET', path: `/v1/transcription/jobs/${enc(jobId)}`, repeatable: true })
      return parse(transcriptionJobSchema, res)
    },
  }
}
