import { errorFromResponse, errorTypeOfStatus, readRateLimit, VoiceApiError } from '../upstream/errors.ts'
import { errorBodySchema } from '../upstream/schemas.ts'
import { mayStore } from './cache-control.ts'
import { PASS_HEADERS, passHeaders } from './upstream.ts'

/** An answer the proxy gives as text (a read's, shared by the requests that joined it). */
export interface TextAnswer {
  status: number
  headers: Headers
  text: string
}

/** What an error answer keeps of the provider's headers besides its type: its back-off (Retry-After, X-RateLimit-*), a 405's Allow. */
const ERROR_PASS_HEADERS = PASS_HEADERS.filter((name) => name !== 'content-type')

/** A body as JSON, or undefined when it is not JSON (a gateway's HTML page, an empty or cut-off body). */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined
  }
}

/** Whether a parsed body is the provider's error shape, `{error: {message, type, …}}` (spec → Errors): passed on as sent. */
export function isProviderErrorBody(body: unknown): boolean {
  return errorBodySchema.safeParse(body).success
}

/**
 * Why no answer came, as a caller of the proxy is told it: what reads say (src/proxy/upstream.ts), without the
 * provider's address — the client's own message named VOICE_API_BASE_URL, an internal address where it points at an
 * egress gateway, to any caller, its key unchecked (the provider checks it, and did not answer). The log has it whole.
 */
function noAnswerMessage(error: VoiceApiError): string {
  if (error.type === 'timeout') return 'the provider did not answer in time (UPSTREAM_TIMEOUT_MS)'
  if (error.status === 0) return `cannot reach the provider (${error.networkCode ?? 'network error'})`
  return error.message
}

function answerOf(error: VoiceApiError): TextAnswer {
  const headers = new Headers({ 'content-type': 'application/json', 'x-cache': 'BYPASS' })
  const rl = error.rateLimit
  if (rl.limit !== undefined) headers.set('x-ratelimit-limit', String(rl.limit))
  if (rl.remaining !== undefined) headers.set('x-ratelimit-remaining', String(rl.remaining))
  if (rl.reset !== undefined) headers.set('x-ratelimit-reset', rl.reset)
  if (rl.retryAfter !== undefined) headers.set('retry-after', String(rl.retryAfter))
  if (error.status === 0 || error.type === 'invalid_response') {
    const status = error.type === 'timeout' ? 504 : 502
    return { status, headers, text: JSON.stringify({ error: { message: noAnswerMessage(error), type: 'internal_error' } }) }
  }
  // An answer without the provider's error body (a gateway's HTML page, `{"error":"…"}`) is reported in the spec's shape.
  const body = isProviderErrorBody(error.body) ? error.body : { error: { message: error.message, type: errorTypeOfStatus(error.status) } }
  return { status: error.status, headers, text: JSON.stringify(body) }
}

/** A failed call creation as the caller gets it: the provider's error, or one in its shape (502/504 when there was no answer). */
export function errorFromVoiceApi(error: VoiceApiError): Response {
  const answer = answerOf(error)
  return new Response(answer.text, { status: answer.status, headers: answer.headers })
}

/**
 * A provider error (status ≥ 400) whose body is not its error shape — a gateway's page that would leak its
 * internals and break a client parsing the error — as POST /v1/call answers one: same status,
 * `{"error":{"message":"HTTP 503 with no error body","type":"internal_error"}}` typed by the status, and the
 * provider's back-off headers as it sent them. A body in the shape is returned as it came, byte for byte.
 */
export function providerError(status: number, headers: Headers, text: string, now: number): TextAnswer {
  const body = parseJson(text)
  if (isProviderErrorBody(body)) return { status, headers: passHeaders(headers, status), text }
  return reshapedError(status, headers, body, now)
}

/** providerError's answer to a body (parsed: undefined when it is not JSON) known not to be the provider's error shape. */
export function reshapedError(status: number, headers: Headers, body: unknown, now: number): TextAnswer {
  const answer = answerOf(errorFromResponse(status, headers, body, now))
  passHeaders(headers, status, answer.headers, ERROR_PASS_HEADERS)
  return answer
}

/**
 * A read answered 2xx with a body that is not JSON (cut off, a gateway's page): 502 in the error shape, as
 * POST /v1/call answers an invalid response, with the provider's back-off headers. Never cached.
 */
export function invalidAnswer(status: number, headers: Headers, now: number): TextAnswer {
  const answer = answerOf(new VoiceApiError({ type: 'invalid_response', status, message: `the provider's answer (HTTP ${status}) is not valid JSON`, rateLimit: readRateLimit(headers, now) }))
  passHeaders(headers, answer.status, answer.headers, ERROR_PASS_HEADERS)
  return answer
}

/**
 * A provider's answer to a read (JSON or a recording's non-audio answer) as the proxy passes it on — an error in the
 * spec's shape (providerError), anything else with the headers it passes — and whether the cache may keep it: not what
 * the provider marks no-store, whose Cache-Control then goes on, so no cache after this one keeps it either.
 */
export function readAnswer(status: number, headers: Headers, text: string, now: number): TextAnswer & { storable: boolean } {
  const answer = status >= 400 ? providerError(status, headers, text, now) : { status, headers: passHeaders(headers, status), text }
  const storable = mayStore(headers)
  if (!storable) answer.headers.set('cache-control', headers.get('cache-control')!)
  return { ...answer, storable }
}
