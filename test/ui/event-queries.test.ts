import { afterEach, expect, it } from 'vitest'
import { countEventsByHour, listEvents } from '../../src/webhooks/events.ts'
import { drainDue, EventBusyError, requeueEvent } from '../../src/webhooks/processing.ts'
import { inboxBacklog } from '../../src/ui/backlog.ts'
import { requeueMatching } from '../../src/ui/replay-matching.ts'
import { createHarness, makeEvent, type Harness } from '../webhooks/helpers.ts'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

it('listEvents: keyset pages, phone, trace id and date range; backlog; hourly counts; requeue of failed/dead', async () => {
  h = await createHarness('sqlite')
  const ids: string[] = []
  for (let i = 0; i < 7; i++) {
    const event = makeEvent({ event_type: i % 2 ? 'call.busy' : 'call.completed', call: { to_phone: i === 3 ? '+919876543213' : i === 5 ? '098765 43213' : '+919876543210' } })
    expect((await h.send(event)).status).toBe(204)
    ids.push(event.event_id)
    await h.clock.advance(60_000)
  }
  const newestFirst = [...ids].reverse()
  // Keyset pages of 3 walk the whole list once, in order.
  const seen: string[] = []
  let after: { receivedAt: number; eventId: string } | undefined
  for (;;) {
    const page = await listEvents(h.rt, { limit: 3, after })
    if (page.length === 0) break
    seen.push(...page.map((e) => e.event_id))
    const last = page[page.length - 1]!
    after = { receivedAt: Date.parse(last.received_at), eventId: last.event_id }
  }
  expect(seen).toEqual(newestFirst)

  const backlog = await inboxBacklog(h.rt)
  expect(backlog.pending).toBe(7)
  expect(backlog.oldestReceivedAt).toBe(Date.parse((await listEvents(h.rt, { limit: 10_000 })).at(-1)!.received_at))

  // Phone: through the conversations read model once processed — the contact however its number was written.
  await drainDue(h.rt)
  expect((await listEvents(h.rt, { phone: '98765 43213' })).map((e) => e.event_id)).toEqual([ids[5], ids[3]])
  expect((await listEvents(h.rt, { phone: '+919876543213' })).map((e) => e.event_id)).toEqual([ids[5], ids[3]])
  const one = (await listEvents(h.rt, { limit: 1 }))[0]!
  expect((await listEvents(h.rt, { traceId: one.trace_id! })).map((e) => e.event_id)).toEqual([one.event_id])
  const second = Date.parse((await listEvents(h.rt, { limit: 10 })).find((e) => e.event_id === ids[1])!.received_at)
  expect((await listEvents(h.rt, { since: second, until: second + 120_000 })).map((e) => e.event_id)).toEqual([ids[2], ids[1]])

  const hours = await countEventsByHour(h.rt, 0, h.clock.now() + 1)
  expect(hours.reduce((s, c) => s + c.count, 0)).toBe(7)
  expect(new Set(hours.map((c) => c.event_type))).toEqual(new Set(['call.completed', 'call.busy']))

  // Replay all failed/dead matching a filter: only those, back to pending.
  await h.rt.store.db.updateTable('webhook_events').set({ status: 'dead', last_error: 'x' }).where('event_id', 'in', [ids[1]!, ids[2]!]).execute()
  expect(await requeueMatching(h.rt, { type: 'call.busy' })).toBe(1)
  const after2 = await listEvents(h.rt, { limit: 10 })
  expect(after2.find((e) => e.event_id === ids[1])!.status).toBe('pending')
  expect(after2.find((e) => e.event_id === ids[2])!.status).toBe('dead')
  expect(await requeueMatching(h.rt, { status: 'processed' })).toBe(0)
})

it('replay all leaves an event a worker holds right now, and one processed since the list was read', async () => {
  h = await createHarness('sqlite')
  const held = makeEvent({ event_type: 'call.busy' })
  const free = makeEvent({ event_type: 'call.busy' })
  for (const e of [held, free]) expect((await h.send(e)).status).toBe(204)
  const now = h.clock.now()
  // A worker is retrying `held` (status failed, its claim live for another minute); `free` is dead and unclaimed.
  await h.rt.store.db.updateTable('webhook_events').set({ status: 'failed', attempts: 3, claimed_by: 'worker-A', claimed_until: now + 60_000 }).where('event_id', '=', held.event_id).execute()
  await h.rt.store.db.updateTable('webhook_events').set({ status: 'dead', attempts: 8, claimed_by: null, claimed_until: null }).where('event_id', '=', free.event_id).execute()
  expect(await requeueMatching(h.rt, {})).toBe(1)
  const rows = await h.rt.store.db.selectFrom('webhook_events').select(['event_id', 'status', 'claimed_by', 'attempts']).execute()
  expect(rows.find((r) => r.event_id === held.event_id)).toMatchObject({ status: 'failed', claimed_by: 'worker-A', attempts: 3 })
  // A dead one gets one attempt back: failing again, it is dead again.
  expect(rows.find((r) => r.event_id === free.event_id)).toMatchObject({ status: 'pending', claimed_by: null, attempts: h.rt.config.webhook.maxAttempts - 1 })
  // Once the claim has lapsed (the worker died), it is queued again.
  await h.clock.advance(61_000)
  expect(await requeueMatching(h.rt, {})).toBe(1)
  // An event no longer failed or dead is not put back, even though a filter listed it before.
  await h.rt.store.db.updateTable('webhook_events').set({ status: 'processed' }).execute()
  expect(await requeueEvent(h.rt, free.event_id, { onlyStatuses: ['failed', 'dead'] })).toBe(false)
  // Replaying one event by id while a worker holds it is refused, not taken over.
  await h.rt.store.db.updateTable('webhook_events').set({ claimed_by: 'worker-B', claimed_until: h.clock.now() + 60_000 }).where('event_id', '=', held.event_id).execute()
  await expect(requeueEvent(h.rt, held.event_id)).rejects.toBeInstanceOf(EventBusyError)
  expect(await requeueEvent(h.rt, 'evt_nope')).toBe(false)
})
