import type { Runtime } from '../runtime.ts'
import { apiErrorResponse } from '../utils/api-error.ts'
import { failureOf, failureResponse, fetchUpstream, passHeaders, withCache } from './upstream.ts'

/**
 * Forwards a request whose body may be large (multipart CSV or audio, or anything under /v1 we do not
 * know) chunk by chunk: nothing is buffered, so memory stays flat whatever the size. The body is counted
 * on the way and cut off past PROXY_MAX_UPLOAD_BYTES (413). The deadline is an idle timer: it restarts
 * with every chunk, so a large upload on a slow link is not cut off while bytes still flow.
 */
export async function streamThrough(
  rt: Runtime,
  request: Request,
  init: { apiKey: string; pathAndQuery: string; onSuccess?: () => Promise<void> },
): Promise<Response> {
  const max = rt.config.proxy.maxUploadBytes
  const tooLarge = () =>
    withCache(apiErrorResponse(413, 'invalid_request', `request body is larger than ${max} bytes (PROXY_MAX_UPLOAD_BYTES)`), 'BYPASS')
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > max) return tooLarge()

  const timeoutMs = rt.config.upstreamTimeoutMs
  const controller = new AbortController()
  let timer: NodeJS.Timeout | undefined
  const arm = () => {
    clearTimeout(timer)
    timer = setTimeout(() => controller.abort(new DOMException('upstream timeout', 'TimeoutError')), timeoutMs)
    timer.unref()
  }
  let received = 0
  let overLimit = false
  let body: ReadableStream<Uint8Array> | null = null
  if (request.body && request.method !== 'GET' && request.method !== 'HEAD') {
    body = request.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, ctl) {
          received += chunk.byteLength
          if (received > max) {
            overLimit = true
            ctl.error(new Error('upload too large'))
            return
          }
          arm()
          ctl.enqueue(chunk)
        },
      }),
    )
  }
  const headers: Record<string, string> = {}
  for (const name of ['content-type', 'idempotency-key']) {
    const value = request.headers.get(name)
    if (value !== null) headers[name] = value
  }
  arm()
  try {
    const result = await fetchUpstream(rt, { method: request.method, pathAndQuery: init.pathAndQuery, apiKey: init.apiKey, headers, body, signal: controller.signal })
    if (overLimit) {
      if (result.ok) await result.response.body?.cancel().catch(() => {})
      return tooLarge()
    }
    if (!result.ok) {
      return failureResponse(controller.signal.aborted ? { failure: 'timeout', message: `the provider did not answer within ${timeoutMs} ms` } : result)
    }
    clearTimeout(timer)
    const upstream = result.response
    if (upstream.ok && init.onSuccess) await init.onSuccess().catch((err) => rt.log.warn({ err }, 'post-upload hook failed'))
    return withCache(new Response(request.method === 'HEAD' ? null : upstream.body, { status: upstream.status, headers: passHeaders(upstream.headers) }), 'BYPASS')
  } catch (error) {
    if (overLimit) return tooLarge()
    return failureResponse(failureOf(error, timeoutMs))
  } finally {
    clearTimeout(timer)
  }
}
