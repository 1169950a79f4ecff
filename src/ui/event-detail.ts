import { HTTPError, type H3 } from 'h3'
import { firesForEvent } from '../recipes/claims.ts'
import { listRunRecords } from '../recipes/runner.ts'
import type { Runtime } from '../runtime.ts'
import { getEvent, shownBody } from '../webhooks/events.ts'
import { EventBusyError, EventNotFoundError } from '../webhooks/processing.ts'
import { replayEventNow } from '../webhooks/replay-now.ts'
import { clip, fields, status, table } from './components.ts'
import { flashMessage } from './flash.ts'
import { fmtIso, fmtTime, html } from './html.ts'
import { csrfField, page } from './layout.ts'
import { seeOther } from './responses.ts'
import { summaryLine } from '../recipes/summary.ts'

function idOf(raw: string | undefined): string {
  return decodeURIComponent(raw ?? '')
}

/** `/ui/events/:id`: the stored event, its body and audit headers, processing, recipes; replay. */
export function registerEventDetailPage(app: H3, rt: Runtime): void {
  app.get('/ui/events/:id', async (event) => {
    const id = idOf(event.context.params?.id)
    const found = await getEvent(rt, id)
    if (!found) throw new HTTPError({ status: 404, message: `no webhook event with id "${id}"` })
    const [fires, runs] = await Promise.all([firesForEvent(rt, id), listRunRecords(rt, { eventId: id, limit: 50 })])
    const link = (key: string, value: string | null) => (value ? html`<a href="${`ui/events?${new URLSearchParams({ [key]: value })}`}">${value}</a>` : '—')
    return page(event, {
      title: 'Event',
      active: 'Events',
      flash: flashMessage(event.url.searchParams),
      body: html`<p><a href="ui/events">← Events</a></p>
<div class="actions">
<form method="post" action="${`ui/events/${encodeURIComponent(id)}/replay`}" data-confirm="Replay this event now? It is processed again with every hook (read model, cache, recipes).">
${csrfField(event)}<button type="submit">Replay</button>
</form>
</div>
${fields('Event', [
  ['Event id', found.event_id],
  ['Type', found.event_type],
  ['Status', html`<span id="event-status">${status(found.status)}</span>`],
  ['Target', found.target],
  ['Source', found.source],
  ['Received', fmtIso(found.received_at)],
  ['Conversation', link('conversation_id', found.conversation_id)],
  ['Call / trace id', link('trace_id', found.trace_id)],
  ['Phone', link('phone', found.customer_phone)],
  ['Agent', found.agent_id === null ? '—' : String(found.agent_id)],
  ['Duplicates', String(found.duplicates)],
])}
<h2>Processing</h2>
${fields('Processing', [
  ['Attempts', String(found.attempts)],
  ['Last error', found.last_error ?? '—'],
  ['Next attempt', fmtIso(found.next_attempt_at)],
  ['Processed at', fmtIso(found.processed_at)],
])}
<p><small>switchboard keeps the number of attempts and the last attempt's error; the log lines of each attempt (with this event_id) are in the service log.</small></p>
<h2>Recipes</h2>
${table('Recipes fired', ['Recipe', 'Fired at'], fires.map((f) => [f.recipe, fmtTime(f.firedAt)]), 'No recipe was triggered by this event.')}
${runs.length ? table('Runs', ['Recipe', 'Status', 'Started', 'Duration', 'Summary', 'Error'], runs.map((r) => [r.recipe, status(r.status), fmtTime(r.startedAt), r.endedAt === null ? '—' : `${r.endedAt - r.startedAt} ms`, clip(r.summary === null ? null : summaryLine(r.summary), 120), clip(r.error, 120)])) : ''}
<h2>Audit headers</h2>
${table('Headers', ['Header', 'Value'], Object.entries(found.headers).map(([k, v]) => [k, v]), 'No headers were kept.')}
<h2>Raw body</h2>
<pre tabindex="0"><code>${shownBody(found)}</code></pre>`,
    })
  })

  app.post('/ui/events/:id/replay', async (event) => {
    const id = idOf(event.context.params?.id)
    const back = `ui/events/${encodeURIComponent(id)}`
    try {
      const outcome = await replayEventNow(rt, id)
      return seeOther(event, `${back}?done=replayed-one&s=${outcome.status}`)
    } catch (error) {
      if (error instanceof EventNotFoundError) throw new HTTPError({ status: 404, message: error.message })
      if (error instanceof EventBusyError) return seeOther(event, `${back}?done=replay-busy`)
      throw error
    }
  })
}
