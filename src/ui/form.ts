import type { H3Event } from 'h3'

const formKey = Symbol('ui-form')
type WithForm = { [formKey]?: Promise<FormData> }

/**
 * The posted form, read once per request: the gate reads it to find `_csrf`, the route reads it again
 * for its fields. A body that is not a form yields an empty one.
 */
export function formOf(event: H3Event): Promise<FormData> {
  const ctx = event.context as WithForm
  ctx[formKey] ??= (async () => {
    const type = event.req.headers.get('content-type') ?? ''
    if (!/^(application\/x-www-form-urlencoded|multipart\/form-data)/i.test(type)) return new FormData()
    try {
      return await event.req.formData()
    } catch {
      return new FormData()
    }
  })()
  return ctx[formKey]
}

/** A text field of the form, trimmed ('' when absent or a file). */
export function field(form: FormData, name: string): string {
  const value = form.get(name)
  return typeof value === 'string' ? value.trim() : ''
}
