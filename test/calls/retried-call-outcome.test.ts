import { afterEach, expect, it } from 'vitest'
import { followUpChain, outcomesByTrace } from '../../src/calls/list-calls.ts'
import { loadFollowUps } from '../../src/reports/follow-ups.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

/**
 * A call the provider retried itself has a conversation per attempt, all with its trace id. `calls list` and the Calls
 * page took the outcome of whichever the database returned last: a late webhook for attempt 1 made a call that
 * completed on attempt 2 read `no_answer`, and an update of an earlier attempt's row changed the answer on Postgres
 * only. A follow-up of the last attempt was not found by the chain, which looked at the first attempt only.
 */
describeEachDialect('a call the platform retried', (dialect) => {
  let rt: TestRuntime | undefined
  afterEach(async () => {
    await rt?.close()
    rt = undefined
  })

  const call = (id: string, trace: string, previous: string | null, at: number) =>
    rt!.store.db.insertInto('calls').values({
      id, tenant: 't', agent_id: 103, customer_phone: '+919876543215', idempotency_key: `key_${id}`, trace_id: trace, conversation_id: null,
      previous_conversation_id: previous, scheduled_for: null, parameters: '[]', retry_context: null, metadata: null, recipe: null, campaign: null,
      status: 'initiated', error: null, created_at: at, updated_at: at,
    }).execute()
  const attempt = (id: string, trace: string, status: string, n: number | null, lastEventAt: number) =>
    rt!.store.db.insertInto('conversations').values({
      conversation_id: id, agent_id: 103, contact_number: '+919876543215', status, terminal: 1, duration_seconds: 0,
      started_at: lastEventAt, ended_at: lastEventAt, failure_reason: null, trace_id: trace, from_phone: null, recording_url: null,
      transcript: null, results: null, call_parameters: null, retry: n === null ? null : JSON.stringify({ attempt_number: n, is_final_attempt: n === 3, max_attempts: 3, next_retry_at: null }),
      retry_context: null, last_event_at: lastEventAt, last_event_id: null, source: 'webhook', created_at: lastEventAt, updated_at: lastEventAt,
    }).execute()

  it('reads as its last attempt, however late an earlier attempt\'s webhook came and wherever its row lies', async () => {
    rt = await createTestRuntime({ dialect })
    const t0 = Date.parse('2026-03-18T10:00:00Z')
    await call('call_r', 'trace_r', null, t0)
    // Attempt 2 completed; attempt 1's webhook (no_answer) came later, stamped when it was sent.
    await attempt('conv_r_2', 'trace_r', 'completed', 2, t0 + 120_000)
    await attempt('conv_r', 'trace_r', 'no_answer', 1, t0 + 180_000)
    expect((await outcomesByTrace(rt, ['trace_r'])).get('trace_r')).toEqual({ conversation_id: 'conv_r_2', status: 'completed' })
    // An earlier attempt's row rewritten (Postgres puts the new version last).
    await rt.store.db.updateTable('conversations').set({ updated_at: t0 + 200_000 }).where('conversation_id', '=', 'conv_r').execute()
    expect((await outcomesByTrace(rt, ['trace_r'])).get('trace_r')).toEqual({ conversation_id: 'conv_r_2', status: 'completed' })
    // Without attempt numbers (a reconciled row, an older provider): the later event, then the later chain suffix.
    await call('call_s', 'trace_s', null, t0)
    await attempt('conv_s_3', 'trace_s', 'completed', null, t0 + 60_000)
    await attempt('conv_s_2', 'trace_s', 'busy', null, t0 + 60_000)
    await attempt('conv_s', 'trace_s', 'no_answer', null, t0 + 30_000)
    expect((await outcomesByTrace(rt, ['trace_s'])).get('trace_s')).toEqual({ conversation_id: 'conv_s_3', status: 'completed' })
  })

  it('the daily report counts a follow-up by its last attempt too', async () => {
    rt = await createTestRuntime({ dialect })
    const t0 = Date.parse('2026-03-18T10:00:00Z')
    await call('call_f', 'trace_f', 'conv_before', t0)
    await attempt('conv_f_2', 'trace_f', 'completed', 2, t0 + 120_000)
    await attempt('conv_f', 'trace_f', 'no_answer', 1, t0 + 180_000)
    const followUps = await loadFollowUps(rt, { startMs: t0 - 1, endMs: t0 + 86_400_000 })
    expect(followUps.outcomes).toEqual([{ value: 'completed', count: 1 }])
  })

  it('its follow-up, continuing the last attempt, is found in the chain from either end', async () => {
    rt = await createTestRuntime({ dialect })
    const t0 = Date.parse('2026-03-18T10:00:00Z')
    await call('call_1', 'trace_1', null, t0)
    await attempt('conv_c', 'trace_1', 'no_answer', 1, t0 + 60_000)
    await attempt('conv_c_2', 'trace_1', 'no_answer', 2, t0 + 120_000)
    await call('call_2', 'trace_2', 'conv_c_2', t0 + 3_600_000)
    for (const id of ['call_1', 'call_2']) expect((await followUpChain(rt, id)).map((c) => c.id), id).toEqual(['call_1', 'call_2'])
  })
})
