import type { ErrorType } from '../upstream/schemas.ts'

/** A provider error answer, thrown anywhere in a handler and rendered by the router. */
export class ApiFailure extends Error {
  override readonly name = 'ApiFailure'
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    message: string,
    readonly extra: Record<string, number | string> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
  }
}

export const invalid = (message: string) => new ApiFailure(400, 'invalid_request', message)
export const notFound = (message: string) => new ApiFailure(404, 'not_found', message)
