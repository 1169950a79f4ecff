import { timeUpstreamRequest } from '../upstream/metrics.ts'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { ReadableStream as NodeWebReadableStream } from 'node:stream/web'
import type { Runtime } from '../runtime.ts'
import { apiErrorResponse } from '../upstream/api-error.ts'
import { readLimited } from '../utils/read-limited.ts'
import { isProviderErrorBody, parseJson, reshapedError } from './error-answer.ts'
import { createIdleDeadline } from './idle-deadline.ts'
import { failureOf, failureResponse, NULL_BODY_STATUSES, passHeaders, STREAMED_PASS_HEADERS, upstreamUrl, withCache } from './upstream.ts'

/**
 * Sends a streamed body with node:http rather than fetch: undici keeps every chunk of a streamed request
 * body alive until the request completes (measured: a 20 MB upload grew memory by 20 MB), node:http
 * releases each chunk once written.
 */
function sendStreaming(
  url: string,
  init: { method: string; headers: Record<string, string>; body: ReadableStream<Uint8Array> | null; signal: AbortSignal },
): Promise<IncomingMessage> {
  const target = new URL(url)
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise((resolve, reject) => {
    const req = send(target, { method: init.method, headers: init.headers, signal: init.signal })
    req.once('response', resolve)
    req.once('error', reject)
    if (!init.body) {
      req.end()
      return
    }
    pipeline(Readable.fromWeb(init.body as NodeWebReadableStream<Uint8Array>), req).catch((error: unknown) => {
      req.destroy(error as Error)
      reject(error)
    })
  })
}

function toHeaders(raw: IncomingMessage['headers']): Headers {
  const headers = new Headers()
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v)
  }
  return headers
}

/** The most of an error answer read to tell whether it is the provider's error body (those are a few hundred bytes). */
const MAX_ERROR_BODY_BYTES = 64 * 1024

/** The 413 for an upload past PROXY_MAX_UPLOAD_BYTES; the connection closes after it, so the client stops sending. */
export function uploadTooLarge(max: number): Response {
  return withCache(apiErrorResponse(413, 'invalid_request', `request body is larger than ${max} bytes (PROXY_MAX_UPLOAD_BYTES)`, { headers: { connection: 'close' } }), 'BYPASS')
}

/** An upload its caller ended before its body was whole: logged at info (the caller's doing, not the provider's), and a 400. */
export function uploadCancelled(rt: Runtime, path: string, fields: Record<string, unknown> = {}): Response {
  rt.log.info({ path, ...fields }, 'proxy upload ended by its caller before its body was whole; the provider was not given a whole request')
  return withCache(apiErrorResponse(400, 'invalid_request', 'the request body ended before it was whole (the upload was cancelled)'), 'BYPASS')
}

/**
 * Forwards a request whose body may be large (multipart CSV or audio, or anything under /v1 we do not
 * know) chunk by chunk: nothing is buffered, so memory stays flat whatever the size. The body is counted
 * on the way and cut off past PROXY_MAX_UPLOAD_BYTES (413). The deadline is an idle timer: it restarts
 * with every chunk, up and down, so a large upload on a slow link is not cut off while bytes still flow.
 */
export async function streamThrough(
  rt: Runtime,
  request: Request,
  init: { apiKey: string; pathAndQuery: string; onSuccess?: () => Promise<void> },
): Promise<Response> {
  const max = rt.config.proxy.maxUploadBytes
  // The rest of the body is not read: the connection closes after the 413, so the client stops sending it (a kept
  // connection would wait for every byte it declared, or drain them unread).
  const tooLarge = () => uploadTooLarge(max)
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > max) return tooLarge()

  const timeoutMs = rt.config.upstreamTimeoutMs
  // Idle, both ways: restarted by every chunk of the upload, then of the answer — so a large file on a slow link
  // goes through, and a provider that stalls halfway through its answer is cut off rather than held for ever.
  const deadline = createIdleDeadline(timeoutMs)
  let received = 0
  let overLimit = false
  // The caller's own upload failed (it hung up mid-body): not the provider's doing, so not noted against its health.
  let callerFailed = false
  let body: ReadableStream<Uint8Array> | null = null
  if (request.body && request.method !== 'GET' && request.method !== 'HEAD') {
    const reader = request.body.getReader()
    body = new ReadableStream<Uint8Array>({
      async pull(ctl) {
        let next: ReadableStreamReadResult<Uint8Array>
        try {
          next = await reader.read()
        } catch (error) {
          callerFailed = true
          ctl.error(error)
          return
        }
        if (next.done) return ctl.close()
        received += next.value.byteLength
        if (received > max) {
          overLimit = true
          ctl.error(new Error('upload too large'))
          await reader.cancel().catch(() => {})
          return
        }
        deadline.arm()
        ctl.enqueue(next.value)
      },
      cancel: (reason) => reader.cancel(reason),
    })
  }
  const headers: Record<string, string> = { authorization: `Bearer ${init.apiKey}`, accept: 'application/json' }
  // What the caller asked for goes on as asked: a recording by a query or a route we do not know may be ranged, or
  // conditional (the provider's 304 comes back, with no body). A compressed upload stays labelled as such: its bytes
  // go on as they came.
  for (const name of ['accept', 'content-type', 'content-encoding', 'idempotency-key', 'range', 'if-range', 'if-none-match', 'if-modified-since', 'if-match', 'if-unmodified-since']) {
    const value = request.headers.get(name)
    if (value !== null) headers[name] = value
  }
  // A declared length goes on as it is (Node's parser has read exactly that many bytes for us to pass on; an
  // upstream may refuse a chunked upload with 411); without one, chunked.
  if (body) {
    if (declared !== null && /^\d+$/.test(declared.trim())) headers['content-length'] = declared.trim()
    else headers['transfer-encoding'] = 'chunked'
  }
  deadline.arm()
  const record = timeUpstreamRequest(rt, request.method, init.pathAndQuery)
  try {
    const upstream = await sendStreaming(upstreamUrl(rt, init.pathAndQuery), { method: request.method, headers, body, signal: deadline.signal })
    if (overLimit) {
      deadline.stop()
      upstream.resume()
      return tooLarge()
    }
    // From here the deadline watches the answer's body (below); it stops when the body ends.
    deadline.arm()
    const status = upstream.statusCode ?? 502
    // Judged as every request to the provider is (src/health/upstream-observation.ts): a 5xx is down, a 4xx is up.
    record(status)
    if (status >= 200 && status < 300 && init.onSuccess) await init.onSuccess().catch((err) => rt.log.warn({ err }, 'post-upload hook failed'))
    // A Response with a body and a null-body status throws: those answers have none to pass on anyway.
    const responseBody = request.method === 'HEAD' || NULL_BODY_STATUSES.has(status) ? null : deadline.watch(Readable.toWeb(upstream) as ReadableStream<Uint8Array>)
    if (!responseBody) {
      deadline.stop()
      upstream.resume()
    }
    const upstreamHeaders = toHeaders(upstream.headers)
    const passed = passHeaders(upstreamHeaders, status, new Headers(), STREAMED_PASS_HEADERS)
    if (status >= 400 && responseBody) {
      // An error is read whole (it is small) to see whether it is the provider's: a gateway's page goes out in the
      // provider's shape, not as sent. One too long to be an error body, or cut off, is not the provider's either.
      const read = await readLimited(responseBody, MAX_ERROR_BODY_BYTES, { overflow: 'cancel' }).catch(() => undefined)
      deadline.stop()
      const body = read?.ok ? parseJson(new TextDecoder().decode(read.bytes)) : undefined
      // The provider's own error goes on as it came: its bytes, every header it had.
      if (read?.ok && isProviderErrorBody(body)) return withCache(new Response(new Uint8Array(read.bytes), { status, headers: passed }), 'BYPASS')
      const shaped = reshapedError(status, upstreamHeaders, body, rt.clock.now())
      return withCache(new Response(shaped.text, { status: shaped.status, headers: shaped.headers }), 'BYPASS')
    }
    return withCache(new Response(responseBody, { status, headers: passed }), 'BYPASS')
  } catch (error) {
    deadline.stop()
    if (overLimit) return tooLarge()
    // Only our own read of the caller's body failing says the caller went: when the provider drops the connection,
    // the pipe cancels the body we read, and that aborts `request.signal` too.
    if (callerFailed) return uploadCancelled(rt, init.pathAndQuery.split('?')[0]!, { received })
    const failure = deadline.signal.aborted ? { ok: false as const, failure: 'timeout' as const, message: `the provider did not answer within ${timeoutMs} ms` } : failureOf(error, timeoutMs)
    record(0, failure.message)
    return failureResponse(failure)
  }
}
