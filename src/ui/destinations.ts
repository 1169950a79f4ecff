import { getRouterParam, HTTPError, type H3 } from 'h3'
import { z } from 'zod'
import { runProcessingTask } from '../coordination/processing-task.ts'
import { DELIVERY_STATUSES, DeliveryBusyError, DeliveryNotFoundError, DestinationNotConfiguredError, destinationsOverviewTask, getDelivery, isKnownDestination, notConfigured, replayDelivery, replayFailedTask } from '../destinations/deliveries.ts'
import { enableDestination } from '../destinations/state.ts'
import { heldDestinations, shownNextAttempt, type Hold } from '../destinations/shown-next-attempt.ts'
import { endPauses } from '../destinations/pauses.ts'
import { discardDestination, stillConfigured, type DiscardResult } from '../destinations/discard.ts'
import type { Runtime } from '../runtime.ts'
import { clip, fields, shortId, status, table } from './components.ts'
import { flashMessage } from './flash.ts'
import { fmtIso, html } from './html.ts'
import { csrfField, page } from './layout.ts'
import { MAX_FILTER_LENGTH } from './events-filter.ts'
import { badQuery, seeOther } from './responses.ts'
import { disabledDestinations } from '../destinations/state.ts'

const DELIVERIES_PAGE_SIZE = 50
/** How long Discard's form waits for the discard before answering that it goes on in the background. */
const DISCARD_ANSWER_MS = 5_000

const blank = (v: unknown) => (typeof v === 'string' ? v.trim() || undefined : v)
/** The deliveries' filters: one the page cannot take is a 400 naming it (it was dropped, and every delivery shown). */
const querySchema = z.object({
  destination: z.preprocess(blank, z.string().max(MAX_FILTER_LENGTH, { error: `destination must be at most ${MAX_FILTER_LENGTH} characters` }).optional()),
  status: z.preprocess(blank, z.enum(DELIVERY_STATUSES, { error: `status must be one of ${DELIVERY_STATUSES.join(', ')} (or empty for any)` }).optional()),
})

/** The 400 for a destination filter naming none the page lists (the select showed "any" above an empty table). */
function unknownDestination(name: string, names: string[]): HTTPError {
  const shown = JSON.stringify(name.length > 100 ? `${name.slice(0, 100)}…` : name)
  const known = names.length > 0 ? `: it lists ${names.join(', ')}` : ' (none is configured or has deliveries kept)'
  return new HTTPError({ status: 400, message: `destination: no destination is named ${shown}${known}` })
}

function option(value: string, label: string, selected: string | undefined) {
  return html`<option value="${value}"${value === (selected ?? '') ? html` selected` : ''}>${label}</option>`
}

/**
 * `/ui/destinations`: each destination's state and queue (pending, delivered, dead, the oldest waiting), its
 * deliveries (the dead ones are the dead letters) with every attempt, replay of one delivery or of everything a
 * destination failed, and re-enabling one that answered 410 Gone — what `destinations …` does from the CLI.
 * The queue is sent by the running service's delivery worker.
 */
export function registerDestinationsPage(app: H3, rt: Runtime): void {
  app.get('/ui/destinations', async (event) => {
    const parsed = querySchema.safeParse(Object.fromEntries(event.url.searchParams))
    if (!parsed.success) throw badQuery(parsed.error)
    const q = parsed.data
    const { destinations, deliveries } = await runProcessingTask(rt, destinationsOverviewTask, {
      deliveries: { destination: q.destination, status: q.status, limit: DELIVERIES_PAGE_SIZE },
    })
    if (q.destination !== undefined && !destinations.some((d) => d.name === q.destination)) throw unknownDestination(q.destination, destinations.map((d) => d.name))
    const filtered = Boolean(q.destination || q.status)
    const configuredNames = new Set(rt.config.destinations.list.map((d) => d.name))
    // A disabled or paused destination's pending deliveries wait for that, not for their own next attempt.
    const holds = new Map<string, Hold>()
    for (const d of destinations) {
      if (d.state === 'removed') holds.set(d.name, { kind: 'removed' })
      else if (d.state === 'disabled') holds.set(d.name, { kind: 'disabled' })
      else if (d.state === 'paused' && d.paused_until) holds.set(d.name, { kind: 'paused', until: Date.parse(d.paused_until) })
    }
    return page(event, {
      title: 'Destinations',
      flash: flashMessage(event.url.searchParams),
      body: destinations.length === 0 && deliveries.length === 0
        ? html`<p>No destination is configured. Declare them under <code>DESTINATIONS</code> in <code>switchboard.config.ts</code> (README → Forwarding events) to forward events to your own systems.</p>`
        : html`${table('Destinations', ['Name', 'URL', 'Events', 'State', 'Pending', 'Delivered', 'Dead', 'Oldest pending', ''], destinations.map((d) => [
  html`<a href="${`ui/destinations?${new URLSearchParams({ destination: d.name })}`}">${d.name}</a>`,
  clip(d.url, 60),
  // Unknown once removed from DESTINATIONS: not "all".
  d.events === null ? '—' : d.events === 'all' ? 'all' : clip(d.events.join(', '), 60),
  d.state === 'disabled'
    ? html`<div class="cell-wrap">${status('disabled')} ${clip(d.disabled_reason, 60)}</div>`
    : d.state === 'paused'
      ? html`<div class="cell-wrap" title="${d.paused_reason ?? ''}">${status('paused')} until ${fmtIso(d.paused_until)}: ${clip(d.paused_reason, 60)}</div>`
      : d.state === 'removed' ? html`<div class="cell-wrap">${status('removed')} no longer configured: its pending deliveries are never sent</div>` : status('active'),
  String(d.pending), String(d.delivered),
  d.dead > 0 ? html`<a href="${`ui/destinations?${new URLSearchParams({ destination: d.name, status: 'dead' })}`}">${String(d.dead)}</a>` : '0',
  fmtIso(d.oldest_pending_at),
  // Removed from DESTINATIONS: nothing sends its deliveries any more; they can only be discarded (or the destination added back).
  !configuredNames.has(d.name)
    ? html`<div class="actions"><form method="post" action="${`ui/destinations/${encodeURIComponent(d.name)}/discard`}" class="inline" data-confirm="${`Delete every delivery kept for ${d.name}? It is no longer configured: its pending ones would never be sent.`}">${csrfField(event)}<button type="submit" class="secondary">Discard</button></form></div>`
    : html`<div class="actions">${d.state === 'disabled'
    ? html`<form method="post" action="${`ui/destinations/${encodeURIComponent(d.name)}/enable`}" class="inline" data-confirm="${`Enable ${d.name} again? Its waiting deliveries go out.`}">${csrfField(event)}<button type="submit">Enable</button></form>`
    : d.state === 'paused'
      ? html`<form method="post" action="${`ui/destinations/${encodeURIComponent(d.name)}/enable`}" class="inline" data-confirm="${`End ${d.name}'s pause now? Its next delivery goes out as a probe; failing, it is paused again.`}">${csrfField(event)}<button type="submit">Resume</button></form>`
      : ''}${d.dead > 0 || d.pending > 0
    ? html`<form method="post" action="${`ui/destinations/${encodeURIComponent(d.name)}/replay`}" class="inline" data-confirm="${`Send every dead delivery of ${d.name}, and every pending one that has failed, again now?`}">${csrfField(event)}<button type="submit" class="secondary">Replay failed</button></form>`
    : ''}</div>`,
]))}
<h2>Deliveries</h2>
<form method="get" action="ui/destinations" class="filters" aria-label="Filter deliveries">
<label>Destination<select name="destination">${option('', 'any', q.destination)}${destinations.map((d) => option(d.name, d.name, q.destination))}</select></label>
<label>Status<select name="status">${option('', 'any', q.status)}${DELIVERY_STATUSES.map((s) => option(s, s, q.status))}</select></label>
<button type="submit">Filter</button>
</form>
${filtered ? html`<p><a href="ui/destinations">Clear filters</a></p>` : ''}
${table('Deliveries', ['Created (UTC)', 'Destination', 'Event', 'Type', 'Status', 'Attempts', 'Next attempt', 'Last answer'], deliveries.map((d) => [
  html`<a href="${`ui/destinations/deliveries/${encodeURIComponent(d.id)}`}" title="${`delivery ${d.id}`}">${fmtIso(d.created_at)}</a>`,
  d.destination,
  shortId(d.event_id, `ui/events/${encodeURIComponent(d.event_id)}`),
  d.event_type,
  status(d.status),
  String(d.attempts),
  fmtIso(shownNextAttempt(d.next_attempt_at, rt.clock.now(), d.status === 'pending' ? holds.get(d.destination) : undefined)),
  d.last_status === null && !d.last_error ? '—' : clip([d.last_status === null ? null : String(d.last_status), d.last_error].filter(Boolean).join(' · '), 80),
]), filtered ? 'No delivery matches.' : 'Nothing forwarded yet.')}
${deliveries.length === DELIVERIES_PAGE_SIZE ? html`<p><small>The newest ${DELIVERIES_PAGE_SIZE}; <code>npm run -s cli -- destinations deliveries --limit N</code> lists more.</small></p>` : ''}`,
    })
  })

  app.get('/ui/destinations/deliveries/:id', async (event) => {
    const id = getRouterParam(event, 'id', { decode: true }) ?? ''
    const found = await getDelivery(rt, id)
    if (!found) throw new HTTPError({ status: 404, message: `no delivery with id "${id}"` })
    return page(event, {
      title: 'Delivery',
      active: 'Destinations',
      flash: flashMessage(event.url.searchParams),
      body: html`<p><a href="${`ui/destinations?${new URLSearchParams({ destination: found.destination })}`}">← ${found.destination}</a></p>
${notConfigured(rt, found.destination) === undefined ? html`<div class="actions">
<form method="post" action="${`ui/destinations/deliveries/${encodeURIComponent(id)}/replay`}" data-confirm="Send this delivery again now (the same webhook-id)?">
${csrfField(event)}<button type="submit">Replay</button>
</form>
</div>` : html`<p>Its destination is no longer configured: it is never sent (<a href="${`ui/destinations?${new URLSearchParams({ destination: found.destination })}`}">discard</a> what is kept of it).</p>`}
${fields('Delivery', [
  ['Delivery id (webhook-id)', found.id],
  ['Destination', found.destination],
  ['Event', html`<a href="${`ui/events/${encodeURIComponent(found.event_id)}`}">${found.event_id}</a>`],
  ['Type', found.event_type],
  ['Conversation', found.conversation_id ?? '—'],
  ['Status', html`<span id="delivery-status">${status(found.status)}</span>`],
  ['Attempts', String(found.attempts)],
  ['Created', fmtIso(found.created_at)],
  ['Delivered', fmtIso(found.delivered_at)],
  ['Next attempt', fmtIso(shownNextAttempt(found.next_attempt_at, rt.clock.now(), found.status === 'pending' ? (await heldDestinations(rt)).get(found.destination) : undefined))],
  ['Last error', found.last_error ?? '—'],
])}
<h2>Attempts</h2>
${table('Attempts', ['#', 'Started (UTC)', 'Answer', 'Latency', 'Result', 'Error', 'Response (first KB)'], found.attempt_log.map((a) => [
  String(a.attempt), fmtIso(a.started_at), a.status === null ? '—' : String(a.status), `${a.latency_ms} ms`, a.result, clip(a.error, 120), clip(a.response, 200),
]), found.status === 'delivered' ? 'Delivered on its first attempt (a first success keeps no attempt row).' : 'Not attempted yet.')}
<h2>Body</h2>
<pre tabindex="0"><code>${typeof found.payload === 'string' ? found.payload : JSON.stringify(found.payload, null, 2)}</code></pre>`,
    })
  })

  app.post('/ui/destinations/deliveries/:id/replay', async (event) => {
    const id = getRouterParam(event, 'id', { decode: true }) ?? ''
    const back = `ui/destinations/deliveries/${encodeURIComponent(id)}`
    let replayed: Awaited<ReturnType<typeof replayDelivery>>
    try {
      replayed = await replayDelivery(rt, id)
    } catch (error) {
      if (error instanceof DeliveryNotFoundError) throw new HTTPError({ status: 404, message: error.message })
      if (error instanceof DestinationNotConfiguredError) throw new HTTPError({ status: 409, message: error.message })
      if (error instanceof DeliveryBusyError) return seeOther(event, `${back}?done=delivery-busy`)
      throw error
    }
    rt.log.info({ delivery_id: id }, 'dashboard: delivery queued again')
    return seeOther(event, `${back}?done=delivery-queued&n=1${replayed.waitsForEnable ? '&w=1' : ''}`)
  })

  app.post('/ui/destinations/:name/replay', async (event) => {
    const name = getRouterParam(event, 'name', { decode: true }) ?? ''
    if (!(await isKnownDestination(rt, name))) throw new HTTPError({ status: 404, message: `no destination named "${name}"` })
    const unconfigured = notConfigured(rt, name)
    if (unconfigured) throw new HTTPError({ status: 409, message: unconfigured })
    const queued = await runProcessingTask(rt, replayFailedTask, { destination: name, since: 0, until: Number.MAX_SAFE_INTEGER })
    rt.log.info({ destination: name, queued }, 'dashboard: failed deliveries queued again')
    const waits = (await disabledDestinations(rt)).has(name)
    return seeOther(event, `ui/destinations?${new URLSearchParams({ destination: name, done: 'delivery-queued', n: String(queued), ...(waits ? { w: '1' } : {}) })}`)
  })

  /** Discards under way in this process, by destination: a second click starts none. */
  const discarding = new Map<string, Promise<DiscardResult>>()
  app.post('/ui/destinations/:name/discard', async (event) => {
    const name = getRouterParam(event, 'name', { decode: true }) ?? ''
    if (!(await isKnownDestination(rt, name))) throw new HTTPError({ status: 404, message: `no destination named "${name}"` })
    const configured = stillConfigured(rt, name)
    if (configured) throw new HTTPError({ status: 409, message: configured })
    if (discarding.has(name)) return seeOther(event, 'ui/destinations?done=destination-discarding')
    // Paced as the purges are (a thirtieth of the database's time): hundreds of thousands of deliveries take minutes,
    // and the form waited for all of them — past a reverse proxy's timeout (a 504, and a second click).
    const work = discardDestination(rt, name).finally(() => discarding.delete(name))
    discarding.set(name, work)
    work.then(
      (discarded) => rt.log.info({ destination: name, ...discarded }, 'dashboard: deliveries of a destination no longer configured discarded'),
      (error: Error) => rt.log.error({ destination: name, err: error.message }, 'dashboard: discarding the deliveries of a destination no longer configured failed; discard it again'),
    )
    let cancel = () => {}
    const later = new Promise<'later'>((resolve) => (cancel = rt.clock.setTimeout(() => resolve('later'), DISCARD_ANSWER_MS)))
    const within = await Promise.race([work.catch(() => 'failed' as const), later])
    cancel()
    if (within === 'later') return seeOther(event, 'ui/destinations?done=destination-discarding')
    // Failed before the answer: the error page says why (and the log).
    if (within === 'failed') await work
    return seeOther(event, `ui/destinations?done=destination-discarded&n=${(await work).deliveries}`)
  })

  app.post('/ui/destinations/:name/enable', async (event) => {
    const name = getRouterParam(event, 'name', { decode: true }) ?? ''
    const enabled = await enableDestination(rt, name)
    // Paused by its breaker (the Resume button): the pause ends, its next delivery is the probe.
    const resumed = await endPauses(rt, name)
    rt.log.info({ destination: name, enabled, resumed }, enabled ? 'dashboard: destination enabled' : 'dashboard: destination pause ended')
    if (!enabled && resumed) return seeOther(event, 'ui/destinations?done=destination-resumed&n=1')
    return seeOther(event, `ui/destinations?done=destination-enabled&n=${enabled ? 1 : 0}`)
  })
}
