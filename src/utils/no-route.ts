import { html } from '../ui/html.ts'
import { relativeFrom } from '../ui/root-relative.ts'
import { apiErrorResponse } from '../upstream/api-error.ts'
import { ADMIN_RESPONSE_HEADERS } from './admin-auth.ts'

/**
 * A request no route answers: 404 in the `{ error: { type, message } }` shape every other answer uses (h3's own body
 * echoed the request's Host); a dashboard path gets a page that leads back to it.
 */
export function noRouteResponse(method: string, path: string): Response {
  const shown = path.length > 200 ? `${path.slice(0, 200)}…` : path
  if (/^\/ui(\/|$)/.test(path)) {
    const page = html`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Not found · switchboard</title></head><body><h1>Not found</h1><p>No page at <code>${shown}</code>.</p><p><a href="${relativeFrom(path, 'ui')}">Back to the dashboard</a></p></body></html>`
    return new Response(page.value, { status: 404, headers: { 'content-type': 'text/html; charset=utf-8', ...ADMIN_RESPONSE_HEADERS } })
  }
  return apiErrorResponse(404, 'not_found', `no route for ${method} ${shown}`)
}

/** h3's error for a request no route matched (answered with noRouteResponse instead). */
export function isNoRoute(error: unknown): boolean {
  return (error as { status?: number }).status === 404 && /^Cannot find any route/.test((error as Error).message ?? '')
}
