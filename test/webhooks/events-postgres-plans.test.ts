import { sql } from 'kysely'
import pg from 'pg'
import { afterEach, expect, it, vi } from 'vitest'
import { listEvents } from '../../src/webhooks/events.ts'
import { DIALECTS } from '../helpers/db.ts'
import { createHarness, type Harness } from './helpers.ts'

let h: Harness | undefined
afterEach(async () => {
  vi.restoreAllMocks()
  await h?.close()
  h = undefined
})

/**
 * Records the statements (text and values) sent to Postgres from now on. Installed before the harness opens its pool:
 * each pooled client binds its `query` when it connects (src/db/connect.ts, guardClient).
 */
function recordStatements(): Array<{ text: string; values: unknown[] }> {
  const seen: Array<{ text: string; values: unknown[] }> = []
  const query = pg.Client.prototype.query
  vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
    if (typeof args[0] === 'string') seen.push({ text: args[0], values: (args[1] as unknown[] | undefined) ?? [] })
    return (query as (...a: unknown[]) => unknown).apply(this, args)
  } as typeof query)
  return seen
}

/** Postgres's plan for a statement, with sequential scans priced out so the plan shows which indexes it can use. */
async function plan(statement: { text: string; values: unknown[] }): Promise<string> {
  const client = await h!.rt.store.pool!.connect()
  try {
    await client.query('begin')
    await client.query('set local enable_seqscan = off')
    const { rows } = await client.query(`explain ${statement.text}`, statement.values)
    await client.query('rollback')
    return rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n')
  } finally {
    client.release()
  }
}

// On Postgres the dashboard's phone search read every stored event (an OR of two IN-subqueries, which it cannot look up
// by index: 1–6 s over a million events, against a 150 ms budget).
it.runIf(DIALECTS.includes('postgres'))('postgres: the events listing by phone looks events up by conversation and trace index, not by walking the table', async () => {
  const statements = recordStatements()
  h = await createHarness('postgres')
  const db = h.rt.store.db
  await db.insertInto('conversations').values({
    conversation_id: 'conv_p', agent_id: 101, contact_number: '+919876543210', status: 'completed', terminal: 1, duration_seconds: 10, started_at: 1, ended_at: 2,
    failure_reason: null, trace_id: 'tr_p', from_phone: null, results: null, call_parameters: '{}', last_event_at: 2, source: 'webhook', created_at: 2, updated_at: 2,
  }).execute()
  statements.length = 0
  await listEvents(h.rt, { phone: '+919876543210' })
  const listing = statements.find((s) => /from "webhook_events"/.test(s.text) && /order by "received_at" desc/.test(s.text))
  expect(listing).toBeDefined()
  const text = await plan(listing!)
  expect(text).toMatch(/Bitmap Index Scan on webhook_events_conversation_handled/)
  expect(text).toMatch(/Bitmap Index Scan on webhook_events_trace_handled/)
  expect(text).not.toMatch(/Filter: .*SubPlan/)
})

// Those two indexes hold no pending event (migration 0021): a lookup by conversation or trace reads the handled events
// through them and the pending ones through the status index, each a bitmap scan.
it.runIf(DIALECTS.includes('postgres'))('postgres: the events listing by conversation or trace reads their partial index and the pending events by status', async () => {
  const statements = recordStatements()
  h = await createHarness('postgres')
  // A table with statistics, as a running service's: 20,000 events of 10,000 calls, 2 % of them pending.
  const db = h.rt.store.db
  const at = h.clock.now()
  for (let i = 0; i < 20_000; i += 2_000) {
    await db.insertInto('webhook_events').values(Array.from({ length: 2_000 }, (_, j) => {
      const n = i + j
      const pending = n % 50 === 0
      return {
        event_id: `evt_p_${n}`, target: 'formant', event_type: 'call.completed', conversation_id: `conv_p_${n >> 1}_1`, trace_id: `tr_p_${n >> 1}`, agent_id: 101,
        body: '{}', headers: '{}', source: 'webhook', received_at: at - 20_000 + n, status: pending ? 'pending' : 'processed', attempts: pending ? 0 : 1,
        next_attempt_at: at, claimed_by: null, claimed_until: null, last_error: null, processed_at: pending ? null : at,
      }
    })).execute()
  }
  await sql`analyze webhook_events`.execute(db)
  statements.length = 0
  await listEvents(h.rt, { conversationId: 'conv_p_7_1' })
  await listEvents(h.rt, { traceId: 'tr_p_7' })
  const listings = statements.filter((s) => /from "webhook_events"/.test(s.text) && /order by "received_at" desc/.test(s.text))
  expect(listings).toHaveLength(2)
  const [byConversation, byTrace] = await Promise.all(listings.map((s) => plan(s)))
  expect(byConversation).toMatch(/Bitmap Index Scan on webhook_events_conversation_handled/)
  expect(byTrace).toMatch(/Bitmap Index Scan on webhook_events_trace_handled/)
  // The pending side is searched in the status index, which carries both ids.
  expect(byConversation).toMatch(/Bitmap Index Scan on webhook_events_status_received_keys[^\n]*\n\s+Index Cond: \(\(status = 'pending'::text\) AND \(received_at >= 0\) AND \(conversation_id = /)
  expect(byTrace).toMatch(/Bitmap Index Scan on webhook_events_status_received_keys[^\n]*\n\s+Index Cond: \(\(status = 'pending'::text\) AND \(received_at >= 0\) AND \(trace_id = /)
})

// The number each event is about is read from its body: in the listing's own SELECT Postgres worked it out for every row
// an OFFSET skipped (10,050 bodies parsed for the 50 rows at offset 10,000).
it.runIf(DIALECTS.includes('postgres'))('postgres: a listing reads the number from the bodies of the rows it returns only', async () => {
  const statements = recordStatements()
  h = await createHarness('postgres')
  statements.length = 0
  await listEvents(h.rt, { offset: 10_000, limit: 50 })
  const listing = statements.find((s) => /from "webhook_events"/.test(s.text) && /offset/.test(s.text))
  expect(listing).toBeDefined()
  expect(listing!.text).not.toMatch(/body/)
})
