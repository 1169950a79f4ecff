import { HTTPError, type H3Event } from 'h3'
import type { z } from 'zod'
import { relativeFrom } from './root-relative.ts'

/**
 * 303 See Other: after a form post, and for pages asked for without a session. `location` is a path the service answers
 * (`ui/mail?done=…`, with or without its leading slash); the header carries it relative to the request's path, so that
 * it reaches the same page under whatever prefix a reverse proxy serves the dashboard at (src/ui/root-relative.ts).
 */
export function seeOther(event: H3Event, location: string): string {
  event.res.status = 303
  event.res.headers.set('location', relativeFrom(event.url.pathname, location))
  event.res.headers.set('cache-control', 'no-store')
  return ''
}

/**
 * A local path to return to after login: only `/ui…`, never another origin (`//host`, `/\host`), and percent-encoded
 * as a Location header must be (a link carrying `?q=क` would otherwise fail the login with a 500).
 */
export function safeNext(value: string | null | undefined): string {
  if (!value || !value.startsWith('/ui') || value.startsWith('//') || /[\\\r\n]/.test(value)) return '/ui'
  let url: URL
  try {
    url = new URL(value, 'http://switchboard.invalid')
  } catch {
    return '/ui'
  }
  const path = `${url.pathname}${url.search}${url.hash}`
  return url.origin === 'http://switchboard.invalid' && /^\/ui(\/|\?|#|$)/.test(path) ? path : '/ui'
}

/**
 * The 400 for a query string a page cannot read: its first problem, naming the parameter (the page shows this message
 * alone, and zod's own — "Invalid input", "Too big: …" — said neither which parameter nor what it takes).
 */
export function badQuery(error: z.ZodError): HTTPError {
  const issue = error.issues[0]
  const name = issue ? issue.path.map(String).join('.') : ''
  const message = issue?.message ?? 'the query string cannot be read'
  return new HTTPError({ status: 400, message: name && !message.startsWith(name) ? `${name}: ${message}` : message })
}
