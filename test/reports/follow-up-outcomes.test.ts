import { afterEach, expect, it } from 'vitest'
import { loadFollowUps } from '../../src/reports/follow-ups.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { callRow, DAY_END, DAY_START, insertConversations } from './seed.ts'

describeEachDialect('follow-up outcomes', (dialect) => {
  let rt: TestRuntime | undefined
  afterEach(async () => {
    await rt?.close()
    rt = undefined
  })

  // The platform retried the follow-up (one conversation per attempt, both with the call's trace id): the first
  // attempt went unanswered, the second completed. The follow-up counts once, as completed.
  it('a follow-up the platform retried counts once, with its latest attempt\'s outcome', async () => {
    rt = await createTestRuntime({ dialect })
    const at = DAY_START + 3_600_000
    // The unanswered attempt is stored first, so a join that keeps whichever row comes first keeps it.
    await insertConversations(rt, [
      { conversation_id: 'conv_fu_1', agent_id: 101, contact_number: '+919800000009', status: 'no_answer', duration_seconds: 0, ended_at: at + 60_000, trace_id: 'tr_fu' },
    ])
    await insertConversations(rt, [
      { conversation_id: 'conv_fu_2', agent_id: 101, contact_number: '+919800000009', status: 'completed', duration_seconds: 40, ended_at: at + 1_800_000, trace_id: 'tr_fu' },
    ])
    await rt.store.db.insertInto('calls').values(callRow({ id: 'call_fu', trace_id: 'tr_fu', recipe: 'no-answer-followup', campaign: null, previous: 'conv_prev_1', created_at: at })).execute()
    expect(await loadFollowUps(rt, { startMs: DAY_START, endMs: DAY_END })).toEqual({ scheduled: 1, refused: 0, completed: 1, outcomes: [{ value: 'completed', count: 1 }] })
  })
  // A recipe may place first calls too (scheduleCall for new leads): they are not follow-ups, whoever placed them.
  // A follow-up is a call continuing an earlier conversation — also one placed straight through the proxy.
  it('counts calls that continue an earlier conversation, not a recipe\'s first calls', async () => {
    rt = await createTestRuntime({ dialect })
    const at = DAY_START + 3_600_000
    await rt.store.db.insertInto('calls').values([
      callRow({ id: 'call_first', trace_id: 'tr_first', recipe: 'new-leads', campaign: 'spring', status: 'scheduled', created_at: at }),
      callRow({ id: 'call_fu', trace_id: 'tr_fu', recipe: 'no-answer-followup', campaign: null, previous: 'conv_prev_1', status: 'scheduled', created_at: at }),
      callRow({ id: 'call_direct_fu', trace_id: 'tr_direct', recipe: null, campaign: null, previous: 'conv_prev_2', status: 'scheduled', created_at: at }),
    ]).execute()
    expect(await loadFollowUps(rt, { startMs: DAY_START, endMs: DAY_END })).toEqual({ scheduled: 2, refused: 0, completed: 0, outcomes: [{ value: 'scheduled', count: 2 }] })
  })
})
