import { afterEach, expect, it } from 'vitest'
import { getEvent, listEvents } from '../../src/webhooks/events.ts'
import { MAX_EVENTS_OFFSET } from '../../src/webhooks/admin.ts'
import { DIALECTS } from '../helpers/db.ts'
import { capturePrepared } from '../helpers/query-plans.ts'
import { createHarness, makeEvent, type Harness } from './helpers.ts'

const ADMIN = 'a-long-admin-token-123'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

async function get(path: string): Promise<Response> {
  return await h!.app.fetch(new Request(`http://localhost${path}`, { headers: { authorization: `Bearer ${ADMIN}` } }))
}

/** Bodies with the number in every place (and non-place) `customer_phone` reads it from. */
function phoneShapes(): Array<{ event_id: string; call: Record<string, unknown> | string | undefined; phone: string | null }> {
  const base = makeEvent().data.call as unknown as Record<string, unknown>
  const without = (call: Record<string, unknown>, key: string) => Object.fromEntries(Object.entries(call).filter(([k]) => k !== key))
  const params = (customer: unknown) => ({ call_parameters: { customer_phone: customer } })
  return [
    { event_id: 'evt_to_phone', call: { ...base, to_phone: '+919876543215' }, phone: '+919876543215' },
    { event_id: 'evt_null_to', call: { ...base, to_phone: null, ...params('+919876543216') }, phone: '+919876543216' },
    { event_id: 'evt_no_to', call: { ...without(base, 'to_phone'), ...params('+919876543217') }, phone: '+919876543217' },
    // A to_phone that is there but no number hides the parameter, as it always has.
    { event_id: 'evt_number_to', call: { ...base, to_phone: 919876543218, ...params('+919876543218') }, phone: null },
    { event_id: 'evt_empty_to', call: { ...base, to_phone: '', ...params('+919876543219') }, phone: null },
    { event_id: 'evt_object_param', call: { ...without(base, 'to_phone'), ...params({ e164: '+91' }) }, phone: null },
    { event_id: 'evt_call_text', call: 'not an object', phone: null },
    { event_id: 'evt_no_call', call: undefined, phone: null },
  ]
}

for (const dialect of DIALECTS) {
  it(`${dialect}: /admin/events refuses an offset past ${MAX_EVENTS_OFFSET} (or not a whole number) with 400 naming it`, async () => {
    h = await createHarness(dialect, { ADMIN_TOKEN: ADMIN })
    for (let i = 0; i < 3; i++) {
      expect((await h.send(makeEvent({ event_id: `evt_off_${i}` }))).status).toBe(204)
      await h.clock.advance(1000)
    }
    for (const offset of ['99999999999999999999', String(MAX_EVENTS_OFFSET + 1), '-1', '1.5', 'x']) {
      const res = await get(`/admin/events?offset=${offset}`)
      expect(res.status, offset).toBe(400)
      const body = (await res.json()) as { error: { message: string; type: string } }
      expect(body.error.type).toBe('invalid_request')
      expect(body.error.message, offset).toMatch(/^offset must be/)
    }
    const page = (await (await get(`/admin/events?offset=1&limit=1`)).json()) as { data: Array<{ event_id: string }> }
    expect(page.data.map((e) => e.event_id)).toEqual(['evt_off_1'])
    expect((await get(`/admin/events?offset=${MAX_EVENTS_OFFSET}`)).status).toBe(200)
  })

  it(`${dialect}: listings read the number called in the database, as an event's own page reads it from its body`, async () => {
    h = await createHarness(dialect, { ADMIN_TOKEN: ADMIN })
    const shapes = phoneShapes()
    for (const shape of shapes) {
      const event = makeEvent({ event_id: shape.event_id }) as unknown as { data: Record<string, unknown> }
      if (shape.call === undefined) delete event.data.call
      else event.data.call = shape.call
      expect((await h.send(event as unknown as Parameters<Harness['send']>[0])).status, shape.event_id).toBe(204)
      await h.clock.advance(1000)
    }
    const listed = new Map((await listEvents(h.rt, { limit: 100 })).map((e) => [e.event_id, e.customer_phone]))
    const admin = (await (await get('/admin/events?limit=100')).json()) as { data: Array<{ event_id: string; customer_phone: string | null }> }
    for (const shape of shapes) {
      expect(listed.get(shape.event_id), shape.event_id).toBe(shape.phone)
      expect((await getEvent(h.rt, shape.event_id))!.customer_phone, shape.event_id).toBe(shape.phone)
      expect(admin.data.find((e) => e.event_id === shape.event_id)!.customer_phone, shape.event_id).toBe(shape.phone)
    }
  })
}

it('sqlite: a listing selects no body (each can be 1 MB, 10,000 to a page): the number is read in the query', async () => {
  h = await createHarness('sqlite', { ADMIN_TOKEN: ADMIN })
  const big = makeEvent({ event_id: 'evt_big', call: { to_phone: '+919876543215' } }) as unknown as { data: Record<string, unknown> }
  big.data.transcript = 'x'.repeat(200_000)
  expect((await h.send(big as unknown as Parameters<Harness['send']>[0])).status).toBe(204)
  const prepared = capturePrepared(h.rt.store.sqlite!)
  try {
    const res = await get('/admin/events?limit=10000&status=pending')
    const { data } = (await res.json()) as { data: Array<{ event_id: string; customer_phone: string | null }> }
    expect(data).toEqual([expect.objectContaining({ event_id: 'evt_big', customer_phone: '+919876543215' })])
  } finally {
    prepared.stop()
  }
  const listing = prepared.texts.find((t) => /from "webhook_events"/.test(t) && /order by "received_at" desc/.test(t))
  expect(listing).toBeDefined()
  expect(listing).not.toMatch(/select \*/)
  // The body is read only inside the JSON functions that take the number out of it, never as a column.
  expect(listing!.replace(/json_\w+\("body"/g, '')).not.toMatch(/"body"/)
})
