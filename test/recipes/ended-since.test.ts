import { afterEach, expect, it } from 'vitest'
import { createQueries } from '../../src/recipes/queries.ts'
import type { Runtime } from '../../src/runtime.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

const T = Date.parse('2026-01-10T12:00:00Z')
const HOUR = 3_600_000
const DAY = 24 * HOUR

/** A conversation as the read model stores it, its times chosen by the test. */
async function conversation(rt: Runtime, id: string, times: { terminal: boolean; startedAt: number | null; durationSeconds: number | null; endedAt: number | null; createdAt: number; updatedAt: number }) {
  await rt.store.db.insertInto('conversations').values({
    conversation_id: id, agent_id: 101, contact_number: '+919876543215', status: times.terminal ? 'no_answer' : 'in_progress', terminal: times.terminal ? 1 : 0,
    duration_seconds: times.durationSeconds, started_at: times.startedAt, ended_at: times.endedAt, failure_reason: null, trace_id: `tr_${id}`, from_phone: null,
    recording_url: null, transcript: null, results: null, call_parameters: null, retry: null, retry_context: null,
    last_event_at: times.updatedAt, last_event_id: null, source: 'webhook', created_at: times.createdAt, updated_at: times.updatedAt,
  }).execute()
}

/**
 * `ctx.data.conversations({ endedSince, endedBefore })` read a call the provider sent without `ended_at` by its
 * `updated_at`: any later write — its recording arriving, a reconciliation — made a call that ended days ago one that
 * "ended since yesterday", and a daily recipe acted on it again. It is now filed as the daily report files it
 * (src/reports/day-of-conversation.ts): its start plus its duration, and a call still under way by when it was first recorded.
 */
describeEachDialect('ctx.data.conversations: endedSince and endedBefore', (dialect) => {
  let rt: TestRuntime | undefined
  afterEach(async () => {
    await rt?.close()
    rt = undefined
  })

  it('file a call without ended_at by when it happened, not by its last write', async () => {
    rt = await createTestRuntime({ dialect })
    await conversation(rt, 'ended_recently', { terminal: true, startedAt: T - 2 * HOUR, durationSeconds: 30, endedAt: T - 2 * HOUR + 30_000, createdAt: T - 2 * HOUR, updatedAt: T - 2 * HOUR })
    // Ended three days ago without an `ended_at`; its recording was written just now.
    await conversation(rt, 'old_touched', { terminal: true, startedAt: T - 3 * DAY, durationSeconds: 60, endedAt: null, createdAt: T - 3 * DAY, updatedAt: T - 60_000 })
    // Ended an hour ago without an `ended_at`, not touched since.
    await conversation(rt, 'recent_no_end', { terminal: true, startedAt: T - HOUR, durationSeconds: 45, endedAt: null, createdAt: T - HOUR, updatedAt: T - HOUR })
    // Still under way since three days ago (its status updated just now).
    await conversation(rt, 'under_way', { terminal: false, startedAt: null, durationSeconds: null, endedAt: null, createdAt: T - 3 * DAY, updatedAt: T - 60_000 })
    const data = createQueries(rt)
    const ids = async (query: Parameters<typeof data.conversations>[0]) => (await data.conversations(query)).map((c) => c.conversation_id).sort()
    expect(await ids({ endedSince: T - DAY })).toEqual(['ended_recently', 'recent_no_end'])
    expect(await ids({ endedBefore: T - DAY })).toEqual(['old_touched', 'under_way'])
    expect(await ids({ endedSince: T - 4 * DAY, endedBefore: T - 2 * DAY })).toEqual(['old_touched', 'under_way'])
    expect(await ids({ endedSince: new Date(T - 90 * 60_000) })).toEqual(['recent_no_end'])
  })
})
