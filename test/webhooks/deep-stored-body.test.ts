import { afterEach, expect, it } from 'vitest'
import { getEvent, listEvents } from '../../src/webhooks/index.ts'
import { pendingRow } from '../../src/webhooks/inbox.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { cliEnv, createHarness, runCli, type Harness } from './helpers.ts'

/**
 * Before 0.20.1 the receiver stored a signed body nested 10,000 deep, and then everything that showed it failed —
 * JSON.stringify ran out of stack: its dashboard page and `GET /admin/events/:id` answered 500, `events show` exited 1.
 * The receiver refuses such bodies now; those stored before are shown as the text they are.
 */
describeEachDialect('an event stored nested deeper than switchboard takes', (dialect) => {
  let h: Harness | undefined
  afterEach(async () => {
    await h?.close()
    h = undefined
  })

  it('is shown as its text: the event detail and `events show`', async () => {
    h = await createHarness(dialect)
    const body = `{"event_id":"evt_deep_old","event_type":"call.completed","data":{"results":{"a":${'['.repeat(10_000)}${']'.repeat(10_000)}}}}`
    await h.rt.store.db
      .insertInto('webhook_events')
      .values(pendingRow({ event_id: 'evt_deep_old', target: 'formant', event_type: 'call.completed', conversation_id: null, trace_id: null, agent_id: null, body, headers: '{}', source: 'webhook' }, h.clock.now()))
      .execute()
    expect((await getEvent(h.rt, 'evt_deep_old'))?.body).toBe(body)
    const shown = await runCli(['events', 'show', 'evt_deep_old', '--json'], cliEnv(h.rt))
    expect([shown.code, shown.err]).toEqual([0, ''])
    expect((JSON.parse(shown.out) as { body: unknown }).body).toBe(body)
  })

  // The receiver refuses such a body now. One stored before made every listing that reached it fail on Postgres (its
  // json type refuses the escape): the Events page and /admin/events answered 500 for as long as the event was kept.
  it('a body holding half of a surrogate pair, stored before 0.20.1, is listed with its number', async () => {
    h = await createHarness(dialect)
    const body = '{"event_id":"evt_half_old","event_type":"call.completed","data":{"call":{"to_phone":"+919876543210"},"results":{"intent":"\\ud800"}}}'
    await h.rt.store.db
      .insertInto('webhook_events')
      .values(pendingRow({ event_id: 'evt_half_old', target: 'formant', event_type: 'call.completed', conversation_id: null, trace_id: null, agent_id: null, body, headers: '{}', source: 'webhook' }, h.clock.now()))
      .execute()
    expect((await listEvents(h.rt, { limit: 10 })).map((e) => [e.event_id, e.customer_phone])).toEqual([['evt_half_old', '+919876543210']])
  })
})
