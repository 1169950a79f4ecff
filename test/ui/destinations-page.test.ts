import { afterAll, beforeAll, expect, it, vi } from 'vitest'
import { deliveryId } from '../../src/destinations/sign.ts'
import { disableDestination } from '../../src/destinations/state.ts'
import { clearPause, recordPause } from '../../src/destinations/pauses.ts'
import { startDeliveryWorker, SWEEP_MS, type DeliveryWorker } from '../../src/destinations/worker.ts'
import { drainDue } from '../../src/webhooks/processing.ts'
import { destination, ok, startSink, WAIT, type Sink } from '../destinations/helpers.ts'
import { cookieHeader, login, startUiServer, TOKEN, type UiServer, redirectedTo } from './helpers.ts'
import { deliver } from './seed.ts'

/**
 * The dashboard's Destinations page against the service on a real port and a real sink on loopback: a sink down
 * for the schedule leaves dead letters; the page shows them with their attempts, and its buttons replay one, replay
 * everything a destination failed, and enable a destination disabled by a 410 — sent by the real delivery worker.
 */
let ui: UiServer
let sink: Sink
let worker: DeliveryWorker
let session: { jar: Map<string, string>; csrf: string }
const events: string[] = []

beforeAll(async () => {
  sink = await startSink((_n, _req, res) => res.writeHead(503).end('upstream <b>maintenance</b>'))
  ui = await startUiServer({
    ADMIN_TOKEN: TOKEN,
    ALLOW_PRIVATE_DESTINATIONS: '1',
    DESTINATIONS: JSON.stringify([destination(sink, { retryScheduleMs: [1_000] })]),
  })
  for (let i = 0; i < 2; i++) events.push(await deliver(ui.server, ui.clock, { event_type: 'call.completed' }))
  await drainDue(ui.server.rt)
  worker = startDeliveryWorker(ui.server.rt)
  // The first attempts, then the one retry the schedule allows: both deliveries end dead.
  await vi.waitFor(() => expect(sink.requests.length).toBe(2), WAIT)
  await ui.clock.advance(1_200 + SWEEP_MS)
  await vi.waitFor(async () => expect(await statuses()).toEqual(['dead', 'dead']), WAIT)
  session = await login(ui.server.url)
}, 60_000)

afterAll(async () => {
  await worker?.stop()
  await ui?.close()
  await sink?.close()
})

async function statuses(): Promise<string[]> {
  const rows = await ui.server.rt.store.db.selectFrom('destination_deliveries').select('status').orderBy('event_id').execute()
  return rows.map((r) => r.status)
}

async function get(path: string): Promise<string> {
  const res = await fetch(`${ui.server.url}${path}`, { headers: { cookie: cookieHeader(session.jar) }, redirect: 'manual' })
  expect(res.status, path).toBe(200)
  return res.text()
}

async function post(path: string): Promise<string> {
  const res = await fetch(`${ui.server.url}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: cookieHeader(session.jar), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: session.csrf }).toString(),
  })
  expect(res.status, path).toBe(303)
  return redirectedTo(res)!
}

it('lists the destination with its queue, and its dead letters with the answers they got', async () => {
  const page = await get('/ui/destinations')
  expect(page).toContain('>Destinations<')
  expect(page).toMatch(/<td><a href="ui\/destinations\?destination=crm">crm<\/a><\/td>/)
  // pending 0, delivered 0, dead 2 (a link to the dead letters)
  expect(page).toMatch(/<td>0<\/td><td>0<\/td><td><a href="ui\/destinations\?destination=crm&amp;status=dead">2<\/a><\/td>/)
  const dead = await get('/ui/destinations?destination=crm&status=dead')
  const id = deliveryId('crm', events[0]!)
  expect(dead).toContain(`href="ui/destinations/deliveries/${id}"`)
  expect(dead.match(/class="status-dead">dead</g)).toHaveLength(2)
  expect(await get('/ui/destinations?status=delivered')).toContain('No delivery matches.')

  const detail = await get(`/ui/destinations/deliveries/${id}`)
  expect(detail).toContain(`<td class="wrap">${id}</td>`)
  expect(detail).toContain(`href="ui/events/${events[0]}"`)
  // Both attempts: 503 and the first KB of the answer, escaped.
  expect(detail.match(/<td>503<\/td>/g)).toHaveLength(2)
  expect(detail).toContain('upstream &lt;b&gt;maintenance&lt;/b&gt;')
  expect(detail).not.toContain('<b>maintenance</b>')
  expect(detail).toContain(`&quot;event_id&quot;: &quot;${events[0]}&quot;`)
})

it('the overview has a Forwarding card: nothing waiting, the two dead letters linked', async () => {
  const overview = await get('/ui')
  // Beside it, today's calls — a day in the reports' zone, which the card names (the rest of the page is in UTC).
  expect(overview).toContain(`<small>Calls today (${ui.server.rt.config.recipes.timezone})</small>`)
  expect(overview).toMatch(/<small>Forwarding<\/small><span class="figure">0 waiting<\/span><small>oldest — · <a href="ui\/destinations\?status=dead">2 dead<\/a> · <a href="ui\/destinations">destinations<\/a><\/small>/)
})

it('replays one delivery, then everything else the destination failed; the worker sends them with the same webhook-id', async () => {
  sink.behave(ok)
  const id = deliveryId('crm', events[0]!)
  const back = await post(`/ui/destinations/deliveries/${id}/replay`)
  expect(back).toBe(`/ui/destinations/deliveries/${id}?done=delivery-queued&n=1`)
  expect(await get(back)).toContain('Queued 1 delivery to be sent again')
  worker.wake()
  await vi.waitFor(async () => expect(await statuses()).toEqual(['delivered', 'dead']), WAIT)
  expect(sink.requests.at(-1)!.headers['webhook-id']).toBe(id)

  const all = await post('/ui/destinations/crm/replay')
  expect(all).toBe('/ui/destinations?destination=crm&done=delivery-queued&n=1')
  worker.wake()
  await vi.waitFor(async () => expect(await statuses()).toEqual(['delivered', 'delivered']), WAIT)
  expect(await get('/ui/destinations')).toMatch(/<td>0<\/td><td>2<\/td><td>0<\/td>/)

  // Mistakes: a destination or delivery that does not exist.
  const missing = await fetch(`${ui.server.url}/ui/destinations/nope/replay`, {
    method: 'POST', headers: { cookie: cookieHeader(session.jar), 'x-csrf-token': session.csrf }, redirect: 'manual',
  })
  expect(missing.status).toBe(404)
  expect((await fetch(`${ui.server.url}/ui/destinations/deliveries/nope`, { headers: { cookie: cookieHeader(session.jar) } })).status).toBe(404)
})

it('shows a destination disabled by a 410 with its reason, and enables it again', async () => {
  await disableDestination(ui.server.rt, 'crm', '410 Gone from http://127.0.0.1/hooks')
  const page = await get('/ui/destinations')
  expect(page).toContain('class="status-disabled">disabled<')
  expect(page).toContain('410 Gone from http://127.0.0.1/hooks')
  expect(page).toContain('action="ui/destinations/crm/enable"')
  // On the overview too: a delivery waits for it since a minute.
  await ui.server.rt.store.db.updateTable('destination_deliveries').set({ status: 'pending', next_attempt_at: ui.clock.now() + 3_600_000, created_at: ui.clock.now() - 61_000 }).where('event_id', '=', events[1]!).execute()
  expect(await get('/ui/overview/live')).toContain('<span class="figure">1 waiting</span><small>oldest 1 min · 0 dead · <span class="status-disabled">crm disabled</span>')
  expect(await post('/ui/destinations/crm/enable')).toBe('/ui/destinations?done=destination-enabled&n=1')
  const after = await get('/ui/destinations?done=destination-enabled&n=1')
  expect(after).toContain('Enabled: its waiting deliveries go out.')
  expect(after).toContain('class="status-active">active<')
  expect(after).not.toContain('action="ui/destinations/crm/enable"')
})

it('offers Discard, not Replay, for a destination no longer configured, and discarding removes its deliveries', async () => {
  const figure = (overview: string) => /<small>Forwarding<\/small><span class="figure">(\d+) waiting</.exec(overview)?.[1]
  const waitingBefore = figure(await get('/ui'))
  // A destination renamed away: its rows stay under the old name, and nothing sends them.
  const now = ui.clock.now()
  await ui.server.rt.store.db.insertInto('destination_deliveries').values({
    id: 'msg_retired_0', destination: 'retired', event_id: events[0]!, event_type: 'call.completed', conversation_id: null, payload: '',
    order_at: now * 1000, ordered: 0, status: 'pending', attempts: 1, round_attempts: 1, next_attempt_at: now, claimed_by: null, claimed_until: null,
    last_status: 503, last_error: 'HTTP 503', created_at: now, delivered_at: null,
  }).execute()
  // Disabled by a 410 before it was removed: the overview says removed, as the Destinations page does, not disabled —
  // and its delivery, never sent, is not among those waiting.
  await disableDestination(ui.server.rt, 'retired', '410 Gone')
  const overview = await get('/ui')
  expect(figure(overview)).toBe(waitingBefore)
  expect(overview).toContain('<span class="status-removed">retired removed: 1 never sent</span>')
  expect(overview).not.toContain('retired disabled')
  const page = await get('/ui/destinations')
  expect(page).toContain('(no longer configured)')
  expect(page).toContain('action="ui/destinations/retired/discard"')
  expect(page).not.toContain('action="ui/destinations/retired/replay"')
  expect(page).not.toContain('action="ui/destinations/crm/discard"')
  expect(await post('/ui/destinations/retired/discard')).toBe('/ui/destinations?done=destination-discarded&n=1')
  const after = await get('/ui/destinations?done=destination-discarded&n=1')
  expect(after).toContain('Discarded 1 delivery of a destination no longer configured.')
  expect(after).not.toContain('(no longer configured)')
  // A configured destination is refused.
  const refused = await fetch(`${ui.server.url}/ui/destinations/crm/discard`, {
    method: 'POST', redirect: 'manual',
    headers: { cookie: cookieHeader(session.jar), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: session.csrf }).toString(),
  })
  expect(refused.status).toBe(409)
})

it('a discard that takes a while answers at once that it goes on in the background; a second click starts none', async () => {
  const now = ui.clock.now()
  const db = ui.server.rt.store.db
  const rows = Array.from({ length: 4_000 }, (_, i) => ({
    id: `msg_bulk_${i}`, destination: 'bulk', event_id: events[0]!, event_type: 'call.completed', conversation_id: null, payload: '',
    order_at: now * 1000 + i, ordered: 0, status: 'pending', attempts: 1, round_attempts: 1, next_attempt_at: now, claimed_by: null, claimed_until: null,
    last_status: 503, last_error: 'HTTP 503', created_at: now, delivered_at: null,
  }))
  for (let i = 0; i < rows.length; i += 500) await db.insertInto('destination_deliveries').values(rows.slice(i, i + 500)).execute()
  const left = async () => Number((await db.selectFrom('destination_deliveries').select((eb) => eb.fn.countAll<number>().as('n')).where('destination', '=', 'bulk').executeTakeFirstOrThrow()).n)
  // Paced as the purges are, thousands of deliveries take seconds: the form waited for all of them (a reverse proxy's 504).
  const answer = post('/ui/destinations/bulk/discard')
  await vi.waitFor(async () => expect(await left()).toBeLessThan(4_000), WAIT)
  await ui.clock.advance(5_000)
  expect(await answer).toBe('/ui/destinations?done=destination-discarding')
  expect(await post('/ui/destinations/bulk/discard')).toBe('/ui/destinations?done=destination-discarding')
  expect(await get('/ui/destinations?done=destination-discarding')).toContain('it goes on in the background')
  await vi.waitFor(async () => expect(await left()).toBe(0), { timeout: 30_000, interval: 100 })
}, 60_000)

it("shows a destination its circuit breaker pauses as paused, until when and why (escaped), on the page and the overview, and active once it resumes", async () => {
  const until = ui.clock.now() + 90_000
  await recordPause(ui.server.rt, 'crm', { until, reason: '5 failed attempts in a row; the last: HTTP 503 <b>maintenance</b>' })
  const page = await get('/ui/destinations')
  expect(page).toContain('class="status-paused">paused<')
  expect(page).toContain(`until ${new Date(until).toISOString().slice(0, 19).replace('T', ' ')}`)
  expect(page).toContain('HTTP 503 &lt;b&gt;maintenance&lt;/b&gt;')
  expect(page).not.toContain('<b>maintenance</b>')
  expect(await get('/ui/overview/live')).toContain('class="status-paused">crm paused<')
  // A pause whose end has passed (its replica killed before it could say it resumed) is not shown.
  await ui.clock.advance(91_000)
  expect(await get('/ui/destinations')).toContain('class="status-active">active<')
  await recordPause(ui.server.rt, 'crm', { until: ui.clock.now() + 60_000, reason: 'x' })
  await clearPause(ui.server.rt, 'crm')
  expect(await get('/ui/destinations')).toContain('class="status-active">active<')
  expect(await get('/ui/overview/live')).not.toContain('paused')
})
