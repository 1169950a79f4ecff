import { z } from 'zod'
import { EVENT_STATUSES, type EventFilter } from '../webhooks/events.ts'

/** The events page's filters, from the query string (or a posted form: "replay all matching"). */
const text = z.string().trim().max(200).optional().transform((v) => (v ? v : undefined))
const day = z
  .string()
  .trim()
  .optional()
  .transform((v) => (v ? v : undefined))
  .refine((v) => v === undefined || (/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2})?$/.test(v) && !Number.isNaN(Date.parse(v.length === 10 ? `${v}T00:00:00Z` : `${v}:00Z`))), {
    error: 'dates are YYYY-MM-DD or YYYY-MM-DDTHH:MM (UTC)',
  })

export const eventsQuerySchema = z.object({
  type: text,
  status: z.union([z.enum(EVENT_STATUSES), z.literal('')]).optional().transform((v) => (v ? v : undefined)),
  from: day,
  to: day,
  trace_id: text,
  conversation_id: text,
  phone: text,
  after: text,
})
export type EventsQuery = z.output<typeof eventsQuerySchema>

function utc(v: string, endOfDay: boolean): number {
  if (v.length === 10) return Date.parse(`${v}T00:00:00Z`) + (endOfDay ? 86_400_000 : 0)
  return Date.parse(`${v}:00Z`)
}

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
