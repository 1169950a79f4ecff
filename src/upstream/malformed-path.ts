import { apiErrorResponse } from './api-error.ts'

/** Whether a path has a `%` escape that is not percent-encoded UTF-8 (`%ff%fe`, `%zz`, a lone `%`). */
export function isMalformedPath(pathname: string): boolean {
  try {
    decodeURIComponent(pathname)
    return false
  } catch {
    return true
  }
}

/**
 * h3 refuses such a path before any route runs, with its own `{"status":400,…}` body. Under the provider's
 * API (`/v1`, the sandbox's `/sandbox/v1`) a client expects the provider's error shape instead.
 */
export function malformedPathAnswer(pathname: string): Response {
  return apiErrorResponse(400, 'invalid_request', `malformed path: ${pathname} is not valid percent-encoded UTF-8`)
}
