import type { ErrorBody, ErrorType } from './schemas.ts'

/**
 * A response in the provider's error shape `{error: {message, type, …extra}}`, used by the sandbox and
 * by the proxy's local answers so callers see one format.
 */
export function apiErrorResponse(
  status: number,
  type: ErrorType,
  message: string,
  // The Headers constructor's own argument type: `HeadersInit` is a DOM name, absent from the recipes' type check.
  options: { extra?: Record<string, number | string>; headers?: ConstructorParameters<typeof Headers>[0] } = {},
): Response {
  const body: ErrorBody = { error: { message, type, ...options.extra } }
  const headers = new Headers(options.headers)
  headers.set('content-type', 'application/json')
  return new Response(JSON.stringify(body), { status, headers })
}
