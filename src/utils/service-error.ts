/**
 * The service's one error shape, `{"error": {"message", "type"}}` — the provider's, which the proxy, the receiver and
 * the sandbox answer in — for the service's own routes (/admin, the dashboard's JSON answers, anything h3 would
 * otherwise answer with its `{status, message}` body).
 */
const TYPES: Readonly<Record<number, string>> = {
  400: 'invalid_request',
  401: 'authentication_error',
  403: 'permission_denied',
  404: 'not_found',
  409: 'conflict',
  429: 'rate_limit_exceeded',
}

/** The `type` an error of this status is answered with. */
export function serviceErrorType(status: number): string {
  return TYPES[status] ?? (status >= 500 ? 'internal_error' : 'invalid_request')
}

/** An uncached JSON error in the service's shape, with `headers` (an error's own, e.g. `HX-Refresh`) added. */
export function serviceErrorResponse(status: number, message: string, headers?: Headers | Readonly<Record<string, string>>): Response {
  const answer = new Response(JSON.stringify({ error: { message, type: serviceErrorType(status) } }), { status })
  for (const [name, value] of headers instanceof Headers ? headers : Object.entries(headers ?? {})) answer.headers.set(name, value)
  answer.headers.set('content-type', 'application/json')
  answer.headers.set('cache-control', 'no-store')
  answer.headers.set('x-content-type-options', 'nosniff')
  return answer
}
