import { isProviderTarget } from '../webhooks/provider-target.ts'
import { HTTPError, type H3 } from 'h3'
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
import { seeOther } from './responses.ts'

export const EVENTS_PAGE_SIZE = 50

function parseQuery(params: URLSearchParams | FormData): EventsQuery {
  const input: Record<string, string> = {}
  for (const key of ['type', 'status', 'from', 'to', 'trace_id', 'conversation_id', 'phone', 'after']) {
    const v = params.get(key)
    if (typeof v === 'string') input[key] = v
  }
  const parsed = eventsQuerySchema.safeParse(input)
  if (!parsed.success) throw new HTTPError({ status: 400, message: parsed.error.issues[0]?.message ?? 'bad filter' })
  return parsed.data
}

function filterForm(q: EventsQuery) {
  const option = (value: string, current: string | undefined) => html`<option value="${value}"${value === (current ?? '') ? html` selected` : ''}>${value || 'any'}</option>`
  return html`<form method="get" action="/ui/events" class="filters" role="search" aria-label="Filter events">
<label>Type<select name="type">${['', ...WEBHOOK_EVENT_TYPES].map((t) => option(t, q.type))}</select></label>
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
    const q = parseQuery(event.url.searchParams)
    const events = await listEvents(rt, { ...toEventFilter(q), limit: EVENTS_PAGE_SIZE })
    const params = filterParams(q)
    const last = events[events.length - 1]
    const nextParams = new URLSearchParams(params)
    if (last) nextParams.set('after', encodeCursor(Date.parse(last.received_at), last.event_id))
    const rows = events.map((e) => [
      fmtIso(e.received_at),
      // Shortened like the other ids (the whole one in the tooltip): a provider's event ids run to dozens of characters.
      shortId(e.event_id, `/ui/events/${encodeURIComponent(e.event_id)}`),
      // A named target's event as recipes and destinations name it (`crm:contact.updated`): its type alone does not
      // tell a CRM's `created` from a GitHub's.
      e.source !== 'reconcile' && !isProviderTarget(rt, e.target) ? `${e.target}:${e.event_type}` : e.event_type,
      status(e.status),
      String(e.attempts),
      e.customer_phone ?? '—',
      shortId(e.conversation_id, e.conversation_id ? `/ui/events?${new URLSearchParams({ conversation_id: e.conversation_id })}` : undefined),
      clip(e.last_error, 60),
    ])
    const filtered = params.toString()
    return page(event, {
      title: 'Events',
      flash: flashMessage(event.url.searchParams),
      body: html`${filterForm(q)}
<div class="actions">
<form method="post" action="/ui/events/replay" data-confirm="Replay every failed or dead event that matches this filter? They are queued for processing again, with every hook.">
${csrfField(event)}${[...params].map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}
<button type="submit" class="secondary">Replay all failed/dead matching</button>
</form>
${filtered ? html`<a href="/ui/events">Clear filters</a>` : ''}
</div>
${table('Events', ['Received (UTC)', 'Event id', 'Type', 'Status', 'Attempts', 'Phone', 'Conversation', 'Last error'], rows, 'No event matches.')}
<nav aria-label="Pages" class="actions">
${q.after ? html`<a href="${`/ui/events${filtered ? `?${filtered}` : ''}`}">First page</a>` : ''}
${events.length === EVENTS_PAGE_SIZE ? html`<a href="${`/ui/events?${nextParams}`}" rel="next">Next page</a>` : ''}
</nav>`,
    })
  })

  app.post('/ui/events/replay', async (event) => {
    const form = await formOf(event)
    const q = parseQuery(form)
    const queued = await requeueMatching(rt, toEventFilter({ ...q, after: undefined }))
    rt.log.info({ queued, filter: Object.fromEntries(filterParams(q)) }, 'dashboard: failed/dead events queued again')
    const back = filterParams(q)
    back.set('done', 'requeued')
    back.set('n', String(queued))
    return seeOther(event, `/ui/events?${back}`)
  })
}
