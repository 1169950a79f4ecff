import { HTTPError, type H3Event } from 'h3'
import { readLimited } from '../utils/read-limited.ts'

const formKey = Symbol('ui-form')
type WithForm = { [formKey]?: Promise<FormData> }

/** The largest CSV the DNC import takes (mail.ts checks the file itself against it). */
export const MAX_CSV_BYTES = 5 * 1024 * 1024

/**
 * How large a posted form may be. Every dashboard form is a few short fields, far below 64 KB — except the DNC
 * import, a CSV plus its multipart framing. Keyed by path because the gate reads the form (for `_csrf`) before
 * any route runs, so the route cannot pass its own limit; `/ui/login` is public and reads it before the rate
 * limiter, so without a limit anyone could make the server hold any amount of memory.
 */
const FORM_BYTES = 64 * 1024
const LARGER_FORMS: ReadonlyMap<string, number> = new Map([['/ui/dnc/import', MAX_CSV_BYTES + FORM_BYTES]])

export function formLimitOf(path: string): number {
  return LARGER_FORMS.get(path) ?? FORM_BYTES
}

function tooLarge(event: H3Event, limit: number): HTTPError {
  // The rest of the body is left unread, so the connection cannot carry another request: the client is told —
  // on the error (answered as JSON) and on the response (for the page the gate or the login renders instead).
  event.res.headers.set('connection', 'close')
  const size = limit >= 1024 * 1024 ? `${Math.floor(limit / (1024 * 1024))} MB` : `${Math.floor(limit / 1024)} KB`
  return new HTTPError({ status: 413, message: `the form is larger than ${size}`, headers: { connection: 'close' } })
}

/**
 * The posted form, read once per request: the gate reads it to find `_csrf`, the route reads it again
 * for its fields. A body that is not a form yields an empty one; one larger than the path's limit is a 413.
 */
export function formOf(event: H3Event): Promise<FormData> {
  const ctx = event.context as WithForm
  ctx[formKey] ??= (async () => {
    const type = event.req.headers.get('content-type') ?? ''
    if (!/^(application\/x-www-form-urlencoded|multipart\/form-data)/i.test(type)) return new FormData()
    const limit = formLimitOf(event.url.pathname)
    // A declared size over the limit is refused before reading anything.
    if (Number(event.req.headers.get('content-length')) > limit) throw tooLarge(event, limit)
    // A body cut off midway reads as malformed (an empty form), as a broken one always has.
    const read = await readLimited(event.req.body, limit, { overflow: 'cancel' }).catch(() => ({ ok: true as const, bytes: new Uint8Array(0) }))
    if (!read.ok) throw tooLarge(event, limit)
    try {
      return await new Response(new Blob([Buffer.from(read.bytes)]), { headers: { 'content-type': type } }).formData()
    } catch {
      return new FormData()
    }
  })()
  return ctx[formKey]
}

/** A text field of the form, trimmed ('' when absent or a file). A NUL character in it is refused (400): no field has one. */
export function field(form: FormData, name: string): string {
  const value = form.get(name)
  if (typeof value !== 'string') return ''
  if (value.includes('\0')) throw new HTTPError({ status: 400, message: `the form field "${name}" has a NUL character` })
  return value.trim()
}
