import { z } from 'zod'
import { EVENT_STATUSES, type EventFilter } from '../webhooks/events.ts'

/**
 * The events page's filters, from the query string (or a posted form: "replay all matching"). Each refusal names its
 * parameter and what it takes: the page shows the message alone, and "Invalid input" left the reader to guess which.
 */
const blank = (v: unknown) => (typeof v === 'string' ? v.trim() || undefined : v)
/**
 * The longest filter value a page takes: above every id the receiver stores (255 characters) and the phone numbers
 * events carry, so that each link a page writes from an event's values opens (at 200, a 250-character conversation id's
 * link was a 400); a cursor (`after`) names an event id in base64url, up to 4/3 of its UTF-8 bytes, so it takes more.
 */
export const MAX_FILTER_LENGTH = 1_000
export const MAX_CURSOR_LENGTH = 2_000
const text = (name: string, max = MAX_FILTER_LENGTH) => z.preprocess(blank, z.string().max(max, { error: `${name} must be at most ${max} characters` }).optional())

const DAY_OR_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2})?$/

function utc(v: string, endOfDay: boolean): number {
  if (v.length === 10) return Date.parse(`${v}T00:00:00Z`) + (endOfDay ? 86_400_000 : 0)
  return Date.parse(`${v}:00Z`)
}

/** A day or minute that exists: Date.parse rolls 2026-02-30 over to March 2nd, so the parsed time must read back the same. */
function exists(v: string): boolean {
  const ms = utc(v, false)
  return !Number.isNaN(ms) && new Date(ms).toISOString().slice(0, v.length) === v
}

const day = (name: string) =>
  z.preprocess(
    blank,
    z.string().refine((v) => DAY_OR_TIME.test(v) && exists(v), { error: `${name} must be a date that exists, YYYY-MM-DD or YYYY-MM-DDTHH:MM (UTC)` }).optional(),
  )

export const eventsQuerySchema = z
  .object({
    type: text('type'),
    status: z.preprocess(blank, z.enum(EVENT_STATUSES, { error: `status must be one of ${EVENT_STATUSES.join(', ')} (or empty for any)` }).optional()),
    from: day('from'),
    to: day('to'),
    trace_id: text('trace_id'),
    conversation_id: text('conversation_id'),
    phone: text('phone'),
    after: text('after', MAX_CURSOR_LENGTH),
  })
  .superRefine((q, ctx) => {
    // Both already checked as real dates (their values are digits and dashes only, so they can be quoted back).
    if (!q.from || !q.to) return
    const since = utc(q.from, false)
    const until = utc(q.to, true)
    if (since < until) return
    ctx.addIssue({
      code: 'custom',
      path: ['from'],
      message: since > until && q.from > q.to ? `from (${q.from}) is after to (${q.to}): no event can match; swap them` : `from (${q.from}) must be before to (${q.to})`,
    })
  })
export type EventsQuery = z.output<typeof eventsQuerySchema>

/** `received_at:event_id` in base64url: where the next page starts. */
export function encodeCursor(receivedAt: number, eventId: string): string {
  return Buffer.from(`${receivedAt}:${eventId}`).toString('base64url')
}

function decodeCursor(value: string | undefined): EventFilter['after'] {
  if (!value) return undefined
  const textValue = Buffer.from(value, 'base64url').toString('utf8')
  const colon = textValue.indexOf(':')
  const receivedAt = Number(textValue.slice(0, colon))
  const eventId = textValue.slice(colon + 1)
  // A cursor this page did not make (an epoch-ms it could not hold, an id with a NUL) starts from the top.
  if (colon < 1 || !Number.isSafeInteger(receivedAt) || receivedAt < 0 || eventId.includes('\0')) return undefined
  return { receivedAt, eventId }
}

/** The filter for `listEvents`; a `to` day is inclusive. */
export function toEventFilter(q: EventsQuery): EventFilter {
  return {
    type: q.type,
    status: q.status,
    since: q.from ? utc(q.from, false) : undefined,
    until: q.to ? utc(q.to, true) : undefined,
    traceId: q.trace_id,
    conversationId: q.conversation_id,
    phone: q.phone,
    after: decodeCursor(q.after),
  }
}

/** The query string of the filters (without the cursor), for links and hidden fields. */
export function filterParams(q: EventsQuery): URLSearchParams {
  const p = new URLSearchParams()
  for (const key of ['type', 'status', 'from', 'to', 'trace_id', 'conversation_id', 'phone'] as const) {
    const v = q[key]
    if (v) p.set(key, v)
  }
  return p
}
