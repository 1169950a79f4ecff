import { HTTPError, type H3Event } from 'h3'
import { html } from '../ui/html.ts'
import { relativeFrom } from '../ui/root-relative.ts'
import { apiErrorResponse } from '../upstream/api-error.ts'
import { ADMIN_RESPONSE_HEADERS } from './admin-auth.ts'
import type { Logger } from './logger.ts'

/** What a failure that no route answered itself is logged as: the error the handler threw, not h3's wrapper. */
function thrownBy(error: HTTPError): unknown {
  return error.unhandled && error.cause !== undefined ? error.cause : error
}

/**
 * Logs an error no route answered (a 5xx from an exception) as one JSON line through the service's logger, with the
 * message and the stack as fields. The apps are created `silent`, so h3 does not also print it, as a multi-line
 * stack trace that is not JSON, to the console.
 */
export function logUnhandledError(log: Pick<Logger, 'error'>, error: HTTPError, event: H3Event): void {
  const thrown = thrownBy(error)
  const message = thrown instanceof Error ? thrown.message : String(thrown)
  const stack = thrown instanceof Error ? thrown.stack : undefined
  log.error({ err: message, ...(stack ? { stack } : {}), method: event.req.method, path: event.url.pathname }, 'unhandled error')
}

/**
 * The 500 of an unhandled error, without its details (they are in the log): the one error shape the service answers
 * everywhere, `{"error": {"message", "type"}}`; a dashboard path gets a page that leads back to it.
 */
export function internalErrorResponse(path: string): Response {
  const message = 'internal error (see the service log)'
  if (/^\/ui(\/|$)/i.test(path)) {
    const page = html`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Something went wrong · switchboard</title></head><body><h1>Something went wrong</h1><p>${message}.</p><p><a href="${relativeFrom(path, 'ui')}">Back to the dashboard</a></p></body></html>`
    return new Response(page.value, { status: 500, headers: { 'content-type': 'text/html; charset=utf-8', ...ADMIN_RESPONSE_HEADERS } })
  }
  return apiErrorResponse(500, 'internal_error', message, { headers: { 'cache-control': 'no-store' } })
}
