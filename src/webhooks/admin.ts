import { HTTPError, type H3 } from 'h3'
import type { Runtime } from '../runtime.ts'
import { adminRoute } from '../utils/admin-auth.ts'
import { snakeCaseKeys } from '../utils/snake-case.ts'
import { EVENT_STATUSES, getEvent, listEvents } from './events.ts'
import { EventBusyError, EventNotFoundError } from './processing.ts'
import { replayEventNow } from './replay-now.ts'

/**
 * The deepest `offset` a listing takes: the database walks every row it skips, so a deep page costs as much as
 * reading them all (and a number past what it binds, 1e20, was a 500). Filters narrow a listing instead.
 */
export const MAX_EVENTS_OFFSET = 10_000

function intParam(value: string | null, name: string, max?: number): number | undefined {
  if (value === null || value === '') return undefined
  if (!/^\d+$/.test(value)) throw new HTTPError({ status: 400, message: `${name} must be a whole number` })
  const n = Number(value)
  if (max !== undefined && n > max) throw new HTTPError({ status: 400, message: `${name} must be from 0 to ${max}; to reach older events, narrow the listing (type, status, source, conversation_id)` })
  return n
}

/** `/admin/events`: list (filters), show, replay — behind the ADMIN_TOKEN rules. */
export function registerEventAdminRoutes(app: H3, rt: Runtime): void {
  app.get('/admin/events', adminRoute(rt, async (event) => {
    const q = event.url.searchParams
    const status = q.get('status') ?? undefined
    if (status && !(EVENT_STATUSES as readonly string[]).includes(status)) {
      throw new HTTPError({ status: 400, message: `status must be one of ${EVENT_STATUSES.join(', ')}` })
    }
    const events = await listEvents(rt, {
      type: q.get('type') ?? undefined,
      status,
      source: q.get('source') ?? undefined,
      conversationId: q.get('conversation_id') ?? undefined,
      limit: intParam(q.get('limit'), 'limit'),
      offset: intParam(q.get('offset'), 'offset', MAX_EVENTS_OFFSET),
    })
    return { data: events }
  }))

  app.get('/admin/events/:id', adminRoute(rt, async (event) => {
    const id = decodeURIComponent(event.context.params?.id ?? '')
    const found = await getEvent(rt, id)
    if (!found) throw new HTTPError({ status: 404, message: `no webhook event with id "${id}"` })
    return { data: found }
  }))

  app.post('/admin/events/:id/replay', adminRoute(rt, async (event) => {
    const id = decodeURIComponent(event.context.params?.id ?? '')
    try {
      // snake_case, as every other /admin answer (it was `eventId`, `nextAttemptAt`).
      return { data: snakeCaseKeys(await replayEventNow(rt, id)) }
    } catch (error) {
      if (error instanceof EventNotFoundError) throw new HTTPError({ status: 404, message: error.message })
      if (error instanceof EventBusyError) throw new HTTPError({ status: 409, message: error.message })
      throw error
    }
  }))
}
