import { isProviderTarget } from '../webhooks/provider-target.ts'
import type { H3 } from 'h3'
import { sql } from 'kysely'
import type { Runtime } from '../runtime.ts'
import { WEBHOOK_EVENT_TYPES } from '../upstream/schemas.ts'
import { EVENT_STATUSES, listEvents } from '../webhooks/events.ts'
import { clip, shortId, status, table } from './components.ts'
import { encodeCursor, eventsQuerySchema, filterParams, toEventFilter, type EventsQuery } from './events-filter.ts'
import { flashMessage } from './flash.ts'
import { formOf } from './form.ts'
import { fmtIso, html } from './html.ts'
import { csrfField, page } from './layout.ts'
import { requeueMatching } from './replay-matching.ts'
import { badQuery, seeOther } from './responses.ts'

export const EVENTS_PAGE_SIZE = 50
/** The most stored types the Type filter offers besides the provider's own. */
const STORED_TYPES_OFFERED = 50

function parseQuery(rt: Runtime, params: URLSearchParams | FormData): EventsQuery {
  const input: Record<string, string> = {}
  for (const key of ['type', 'status', 'from', 'to', 'trace_id', 'conversation_id', 'phone', 'after']) {
    const v = params.get(key)
    if (typeof v === 'string') input[key] = v
  }
  const parsed = eventsQuerySchema.safeParse(input)
  if (!parsed.success) throw badQuery(parsed.error)
  return parsed.data
}

/**
 * The table names a named target's event as `crm:contact.updated`, so that label is what people paste into a link, and
 * what the form keeps: it filters by that target and its type `contact.updated` (`replay all matching` too). Any other
 * type (`call.completed`, a type with a colon of no named target) is the stored type as given.
 */
export function typeFilterOf(rt: Runtime, label: string | undefined): { type?: string; target?: string } {
  const colon = label?.indexOf(':') ?? -1
  if (!label || colon < 1) return label ? { type: label } : {}
  const target = label.slice(0, colon)
  const type = label.slice(colon + 1)
  return type && Object.hasOwn(rt.config.webhook.targets, target) && !isProviderTarget(rt, target) ? { type, target } : { type: label }
}

/**
 * The distinct stored event types, first ones by name: a loose index scan (one seek of the type index per type, the
 * recursion's `n` capping them), where `SELECT DISTINCT` would read every entry of the index on each page view.
 */
async function storedEventTypes(rt: Runtime): Promise<string[]> {
  const { rows } = await sql<{ event_type: string | null }>`with recursive types (event_type, n) as (
  select (select event_type from webhook_events order by event_type limit 1), 1
  union all
  select (select w.event_type from webhook_events w where w.event_type > types.event_type order by w.event_type limit 1), types.n + 1
  from types where types.event_type is not null and types.n < ${sql.lit(STORED_TYPES_OFFERED)}
) select event_type from types where event_type is not null`.execute(rt.store.db)
  return rows.flatMap((r) => (r.event_type === null ? [] : [r.event_type]))
}

function filterForm(q: EventsQuery, stored: string[]) {
  const option = (value: string, current: string | undefined) => html`<option value="${value}"${value === (current ?? '') ? html` selected` : ''}>${value || 'any'}</option>`
  // The provider's types, then the others stored (a named target's, a newer provider type), then the current one when
  // neither lists it: a type the select did not offer showed "any", and the next submit dropped the filter.
  const types = [...new Set(['', ...WEBHOOK_EVENT_TYPES, ...stored, ...(q.type ? [q.type] : [])])]
  return html`<form method="get" action="ui/events" class="filters" role="search" aria-label="Filter events">
<label>Type<select name="type">${types.map((t) => option(t, q.type))}</select></label>
<label>Status<select name="status">${['', ...EVENT_STATUSES].map((s) => option(s, q.status))}</select></label>
<label>From (UTC)<input type="date" name="from" value="${q.from ?? ''}"></label>
<label>To (UTC)<input type="date" name="to" value="${q.to ?? ''}"></label>
<label>Call / trace id<input name="trace_id" value="${q.trace_id ?? ''}"></label>
<label>Conversation id<input name="conversation_id" value="${q.conversation_id ?? ''}"></label>
<label>Phone<input name="phone" type="tel" value="${q.phone ?? ''}"></label>
<button type="submit">Filter</button>
</form>`
}

/** `/ui/events`: filters, keyset pages of 50, replay of every failed/dead event matching the filter. */
export function registerEventsPage(app: H3, rt: Runtime): void {
  app.get('/ui/events', async (event) => {
    const q = parseQuery(rt, event.url.searchParams)
    const [events, stored] = await Promise.all([listEvents(rt, { ...toEventFilter(q), ...typeFilterOf(rt, q.type), limit: EVENTS_PAGE_SIZE }), storedEventTypes(rt)])
    const params = filterParams(q)
    const last = events[events.length - 1]
    const nextParams = new URLSearchParams(params)
    if (last) nextParams.set('after', encodeCursor(Date.parse(last.received_at), last.event_id))
    const rows = events.map((e) => [
      fmtIso(e.received_at),
      // Shortened like the other ids (the whole one in the tooltip): a provider's event ids run to dozens of characters.
      shortId(e.event_id, `ui/events/${encodeURIComponent(e.event_id)}`),
      // A named target's event as recipes and destinations name it (`crm:contact.updated`): its type alone does not
      // tell a CRM's `created` from a GitHub's.
      e.source !== 'reconcile' && !isProviderTarget(rt, e.target) ? `${e.target}:${e.event_type}` : e.event_type,
      status(e.status),
      String(e.attempts),
      e.customer_phone ?? '—',
      shortId(e.conversation_id, e.conversation_id ? `ui/events?${new URLSearchParams({ conversation_id: e.conversation_id })}` : undefined),
      clip(e.last_error, 60),
    ])
    const filtered = params.toString()
    return page(event, {
      title: 'Events',
      flash: flashMessage(event.url.searchParams),
      body: html`${filterForm(q, stored)}
<div class="actions">
<form method="post" action="ui/events/replay" data-confirm="Replay every failed or dead event that matches this filter? They are queued for processing again, with every hook.">
${csrfField(event)}${[...params].map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}
<button type="submit" class="secondary">Replay all failed/dead matching</button>
</form>
${filtered ? html`<a href="ui/events">Clear filters</a>` : ''}
</div>
${table('Events', ['Received (UTC)', 'Event id', 'Type', 'Status', 'Attempts', 'Phone', 'Conversation', 'Last error'], rows, 'No event matches.')}
<nav aria-label="Pages" class="actions">
${q.after ? html`<a href="${`ui/events${filtered ? `?${filtered}` : ''}`}">First page</a>` : ''}
${events.length === EVENTS_PAGE_SIZE ? html`<a href="${`ui/events?${nextParams}`}" rel="next">Next page</a>` : ''}
</nav>`,
    })
  })

  app.post('/ui/events/replay', async (event) => {
    const form = await formOf(event)
    const q = parseQuery(rt, form)
    const queued = await requeueMatching(rt, { ...toEventFilter({ ...q, after: undefined }), ...typeFilterOf(rt, q.type) })
    rt.log.info({ queued, filter: Object.fromEntries(filterParams(q)) }, 'dashboard: failed/dead events queued again')
    const back = filterParams(q)
    back.set('done', 'requeued')
    back.set('n', String(queued))
    return seeOther(event, `ui/events?${back}`)
  })
}
