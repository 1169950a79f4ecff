import { H3, serve } from 'h3'
import { afterEach, expect, it } from 'vitest'
import { defineRecipe } from '../../src/recipes/define.ts'
import { executeRun } from '../../src/recipes/runner.ts'
import { listEvents } from '../../src/webhooks/events.ts'
import { drainDue, reconcile } from '../../src/webhooks/index.ts'
import { DIALECTS } from '../helpers/db.ts'
import { capturePrepared, queryPlan } from '../helpers/query-plans.ts'
import { createHarness, makeEvent, START, type Harness } from './helpers.ts'

/**
 * The conversation and trace indexes of `webhook_events` hold no pending event (migration 0021: the receiver's insert
 * no longer writes their random-keyed entries). Every lookup by conversation, trace or phone must still find the
 * events processing has not taken up yet.
 */
let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

const CONVERSATION = '4f1c9a3e-2b7d-4c55-9e0a-1d2c3b4a5f60_1'
const TRACE = '9d8c7b6a-5f4e-4d3c-8b2a-190817263544'
const PHONE = '+919876543211'

/** Two events of one call processed, a third of it still pending, and one of another call. */
async function seed(harness: Harness): Promise<void> {
  const call = { conversation_id: CONVERSATION, trace_id: TRACE, to_phone: PHONE, call_parameters: { customer_phone: PHONE, name: 'Asha' } }
  expect((await harness.send(makeEvent({ event_id: 'evt_k_ringing', event_type: 'call.no_answer', call }))).status).toBe(204)
  expect((await harness.send(makeEvent({ event_id: 'evt_k_done', call }))).status).toBe(204)
  expect((await harness.send(makeEvent({ event_id: 'evt_k_other' }))).status).toBe(204)
  await drainDue(harness.rt)
  await harness.clock.advance(1_000)
  expect((await harness.send(makeEvent({ event_id: 'evt_k_late', call }))).status).toBe(204)
}

const ids = (rows: Array<{ event_id: string }>) => rows.map((r) => r.event_id).sort()

for (const dialect of DIALECTS) {
  it(`${dialect}: events are found by conversation, trace and phone whether processing has taken them up or not`, async () => {
    h = await createHarness(dialect)
    await seed(h)
    const statuses = Object.fromEntries((await listEvents(h.rt, {})).map((e) => [e.event_id, e.status]))
    expect(statuses).toEqual({ evt_k_ringing: 'processed', evt_k_done: 'processed', evt_k_other: 'processed', evt_k_late: 'pending' })
    const all = ['evt_k_done', 'evt_k_late', 'evt_k_ringing']
    expect(ids(await listEvents(h.rt, { conversationId: CONVERSATION }))).toEqual(all)
    expect(ids(await listEvents(h.rt, { traceId: TRACE }))).toEqual(all)
    expect(ids(await listEvents(h.rt, { phone: PHONE }))).toEqual(all)
    // With the other filters beside it.
    expect(ids(await listEvents(h.rt, { conversationId: CONVERSATION, status: 'pending' }))).toEqual(['evt_k_late'])
    expect(ids(await listEvents(h.rt, { traceId: TRACE, status: 'processed' }))).toEqual(['evt_k_done', 'evt_k_ringing'])
    expect(ids(await listEvents(h.rt, { phone: PHONE, type: 'call.completed' }))).toEqual(['evt_k_done', 'evt_k_late'])
    expect(ids(await listEvents(h.rt, { conversationId: CONVERSATION, limit: 1 }))).toEqual(['evt_k_late'])
    expect(await listEvents(h.rt, { conversationId: 'no-such-conversation_1' })).toEqual([])
  })

  it(`${dialect}: a recipe's ctx.data.events({ conversationId }) returns the conversation's pending events too`, async () => {
    h = await createHarness(dialect)
    await seed(h)
    const reads = defineRecipe({
      description: 'reads one conversation',
      async run(ctx) {
        return (await ctx.data.events({ conversationId: CONVERSATION })).map((e) => `${e.event_id}:${e.status}`).sort()
      },
    })
    const run = await executeRun(h.rt, 'reads', reads, { trigger: { type: 'manual' }, dryRun: false, timezone: 'UTC' })
    expect(run.error).toBeNull()
    expect(run.summary).toEqual(['evt_k_done:processed', 'evt_k_late:pending', 'evt_k_ringing:processed'])
  })

  it(`${dialect}: reconciliation does not fetch a conversation whose event is stored but still pending`, async () => {
    let details = 0
    const ended = Date.parse(START) - 3_600_000
    const upstream = new H3()
      .get('/v1/conversations', () => ({
        data: [{ agent_id: 101, contact_number: PHONE, conversation_id: CONVERSATION, duration_seconds: 5, start_timestamp: ended - 5_000, end_timestamp: ended, status: 'completed' }],
        has_more: false,
        total: 1,
      }))
      .get('/v1/conversations/:id', () => {
        details++
        return { data: { agent_id: 101, contact_number: PHONE, conversation_id: CONVERSATION, duration_seconds: 5, failure_reason: null, results: {}, status: 'completed', trace_id: TRACE } }
      })
    const server = serve(upstream, { port: 0, hostname: '127.0.0.1', silent: true })
    await server.ready()
    try {
      h = await createHarness(dialect, { VOICE_API_BASE_URL: server.url!, VOICE_API_KEY: 'sk_test_lookup' })
      // Stored, never processed: nothing about the conversation in the read model yet.
      expect((await h.send(makeEvent({ event_id: 'evt_k_only', call: { conversation_id: CONVERSATION, trace_id: TRACE } }))).status).toBe(204)
      expect(await reconcile(h.rt)).toMatchObject({ skipped: false, listed: 1, fetched: 0, synthesized: 0 })
      expect(details).toBe(0)
    } finally {
      await server.close(true)
    }
  })
}

it.runIf(DIALECTS.includes('sqlite'))('sqlite: lookups by conversation, trace and phone search the handled events\' indexes and the pending ones by status, never the whole table', async () => {
  h = await createHarness('sqlite')
  await seed(h)
  const sqlite = h.rt.store.sqlite!
  const captured = capturePrepared(sqlite)
  await listEvents(h.rt, { conversationId: CONVERSATION })
  await listEvents(h.rt, { traceId: TRACE })
  await listEvents(h.rt, { phone: PHONE })
  captured.stop()
  const listings = captured.texts.filter((t) => /from "webhook_events"/.test(t) && /order by "received_at" desc/.test(t))
  expect(listings).toHaveLength(3)
  const [byConversation, byTrace, byPhone] = listings.map((t) => queryPlan(sqlite, t, 'x').join('\n'))
  expect(byConversation).toMatch(/USING INDEX webhook_events_conversation_handled \(conversation_id=\?\)/)
  expect(byTrace).toMatch(/USING INDEX webhook_events_trace_handled \(trace_id=\?\)/)
  expect(byPhone).toMatch(/USING INDEX webhook_events_conversation_handled \(conversation_id=\?\)/)
  expect(byPhone).toMatch(/USING INDEX webhook_events_trace_handled \(trace_id=\?\)/)
  for (const plan of [byConversation, byTrace, byPhone]) {
    expect(plan).toMatch(/USING INDEX webhook_events_status_received_keys \(status=\? AND received_at>\?\)/)
    expect(plan).not.toMatch(/SCAN webhook_events/)
  }
})
