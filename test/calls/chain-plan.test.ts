import { afterEach, expect, it } from 'vitest'
import { followUpChain } from '../../src/calls/list-calls.ts'
import { capturePrepared, queryPlan } from '../helpers/query-plans.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})

// A follow-up chain is walked back one call at a time by the conversation each continues: with no index on
// calls.conversation_id each step read the whole ledger (up to 20 a chain, growing with history).
it('a follow-up chain is walked by index, both ways, whatever the size of the ledger', async () => {
  rt = await createTestRuntime({})
  const call = (id: string, conversation: string | null, previous: string | null, at: number) =>
    rt!.store.db.insertInto('calls').values({
      id, tenant: 't', agent_id: 101, customer_phone: '+919876543210', idempotency_key: `key_${id}`, trace_id: `tr_${id}`, conversation_id: conversation,
      previous_conversation_id: previous, scheduled_for: null, parameters: '[]', retry_context: null, metadata: null, recipe: null, campaign: null,
      status: 'initiated', error: null, created_at: at, updated_at: at,
    }).execute()
  await call('call_1', 'conv_1', null, 1)
  await call('call_2', 'conv_2', 'conv_1', 2)
  await call('call_3', null, 'conv_2', 3)
  const prepared = capturePrepared(rt.store.sqlite!)
  let chain
  try {
    chain = await followUpChain(rt, 'call_2')
  } finally {
    prepared.stop()
  }
  expect(chain.map((c) => c.id)).toEqual(['call_1', 'call_2', 'call_3'])
  const steps = prepared.texts.filter((t) => /from "calls" where "(previous_)?conversation_id" (= \?|in \(\?[?, ]*\))/.test(t))
  expect(steps).toHaveLength(2)
  for (const text of steps) expect(queryPlan(rt.store.sqlite!, text).join(' ')).toMatch(/USING INDEX calls_(previous_)?conversation\b/)
})

// The provider answers a new call with conversation_id null: the conversation each call became is known from its
// webhooks, by trace id. A chain of such calls was shown as lone first attempts.
it('a chain of calls the provider answered without a conversation id is linked by the conversations their webhooks named', async () => {
  rt = await createTestRuntime({})
  const call = (id: string, previous: string | null, at: number) =>
    rt!.store.db.insertInto('calls').values({
      id, tenant: 't', agent_id: 101, customer_phone: '+919876543210', idempotency_key: `key_${id}`, trace_id: `tr_${id}`, conversation_id: null,
      previous_conversation_id: previous, scheduled_for: null, parameters: '[]', retry_context: null, metadata: null, recipe: null, campaign: null,
      status: 'initiated', error: null, created_at: at, updated_at: at,
    }).execute()
  const conversation = (id: string, trace: string, at: number) =>
    rt!.store.db.insertInto('conversations').values({
      conversation_id: id, agent_id: 101, contact_number: '+919876543210', status: 'no_answer', terminal: 1, duration_seconds: 0,
      started_at: at, ended_at: at, failure_reason: null, trace_id: trace, from_phone: null, recording_url: null,
      transcript: null, results: null, call_parameters: null, retry: null, retry_context: null, last_event_at: at, last_event_id: null, source: 'webhook', created_at: at, updated_at: at,
    }).execute()
  await call('call_1', null, 1)
  await conversation('conv_a_1', 'tr_call_1', 2)
  await call('call_2', 'conv_a_1', 3)
  await conversation('conv_a_2', 'tr_call_2', 4)
  await call('call_3', 'conv_a_2', 5)
  // Another contact's call, continuing nothing of this chain.
  await call('call_other', null, 6)
  const prepared = capturePrepared(rt.store.sqlite!)
  try {
    for (const id of ['call_1', 'call_2', 'call_3']) expect((await followUpChain(rt, id)).map((c) => c.id)).toEqual(['call_1', 'call_2', 'call_3'])
  } finally {
    prepared.stop()
  }
  expect((await followUpChain(rt, 'call_other')).map((c) => c.id)).toEqual(['call_other'])
  for (const text of prepared.texts.filter((t) => /where "trace_id" = \?/.test(t))) expect(queryPlan(rt.store.sqlite!, text).join(' ')).toMatch(/USING INDEX (calls|conversations)_trace\b/)
})
