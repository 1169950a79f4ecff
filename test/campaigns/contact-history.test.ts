import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest'
import { fillContactKeys } from '../../src/campaigns/contact-key-fill.ts'
import { runFollowUps } from '../../src/campaigns/follow-ups.ts'
import { placeCall } from '../../src/calls/place-call.ts'
import { listCalls } from '../../src/calls/list-calls.ts'
import { createQueries } from '../../src/recipes/queries.ts'
import type { Effects } from '../../src/effects.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { applyEventToReadModel } from '../../src/webhooks/read-model.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { makeEvent } from '../webhooks/helpers.ts'
import { startRecordingUpstream, type RecordingUpstream } from './recording-upstream.ts'

/**
 * The follow-up planner reads a contact's history — for the shared attempt cap and "a later call decides" — by the
 * contact's number whatever way it was written. It looked the history up by the spellings of the number it was asked
 * about: calls written otherwise ("098765 43120" sent through the proxy as typed, "+919876543120" by a follow-up) were
 * not found, and a contact capped at 3 attempts got a fourth call.
 */
const NOW = Date.parse('2026-03-10T08:30:00Z') // 14:00 in Kolkata, inside the calling window
const HOUR = 3_600_000
const E164 = '+919876543120'
const NATIONAL = '098765 43120'
const SPACED = '+91 98765 43120'

let upstream: RecordingUpstream
beforeAll(async () => {
  upstream = await startRecordingUpstream()
})
afterAll(async () => {
  await upstream.close()
})

const dry = (): Effects => ({ dryRun: true, plan: [] })

describeEachDialect("a contact's history whatever way its number was written", (dialect) => {
  let rt: TestRuntime
  beforeEach(async () => {
    upstream.requests.length = 0
    rt = await createTestRuntime({
      dialect,
      clock: createManualClock(NOW),
      env: { VOICE_API_KEY: 'sk_test_acme', VOICE_API_BASE_URL: upstream.url, DEFAULT_COUNTRY: 'IN', RECIPES_TIMEZONE: 'Asia/Kolkata' },
    })
  })
  afterEach(async () => {
    await rt.close()
  })

  /** A no_answer of the `spring` campaign to `phone`, ended `hoursAgo`, stored by the read model as a webhook would be. */
  async function noAnswer(conversationId: string, phone: string, hoursAgo: number): Promise<void> {
    const ended = new Date(NOW - hoursAgo * HOUR).toISOString()
    const event = makeEvent({
      event_type: 'call.no_answer',
      timestamp: ended,
      call: { conversation_id: conversationId, to_phone: phone, call_parameters: { customer_phone: phone, campaign: 'spring' }, started_at: ended, ended_at: ended, trace_id: `trace-${conversationId}` },
    })
    await applyEventToReadModel(rt, event, 'webhook', NOW - hoursAgo * HOUR)
  }

  it('the attempt cap counts the calls to the number written otherwise (an event batch)', async () => {
    await noAnswer('c1_1', NATIONAL, 5)
    await noAnswer('c2_1', SPACED, 3)
    await noAnswer('c3_1', E164, 1)
    const capped = await runFollowUps(rt, { conversationIds: ['c3_1'] }, dry())
    expect(capped.plans).toEqual([])
    expect(capped.skips).toEqual([expect.objectContaining({ conversationId: 'c3_1', code: 'attempt_cap' })])
    // The three were counted: a cap of 4 allows the fourth.
    const fourth = await runFollowUps(rt, { conversationIds: ['c3_1'], maxAttempts: 4 }, dry())
    expect(fourth.plans.map((p) => [p.previousConversationId, p.attempt, p.phone])).toEqual([['c3_1', 4, E164]])
    // Asked about the earliest, by its own spelling: the later calls decide.
    const earliest = await runFollowUps(rt, { conversationIds: ['c1_1'] }, dry())
    expect(earliest.plans).toEqual([])
    expect(earliest.skips).toEqual([expect.objectContaining({ conversationId: 'c1_1', code: 'not_latest' })])
    expect(upstream.requests).toHaveLength(0)
  })

  it('a call placed through the proxy as typed counts for the contact (the calls ledger)', async () => {
    await noAnswer('c1_1', E164, 5)
    await noAnswer('c2_1', E164, 3)
    // Sent as the agent typed it, after the second no_answer: it is the contact's third attempt, and the latest.
    const placed = await placeCall(rt, {
      apiKey: 'sk_test_acme',
      request: { agent_id: 101, parameters: [{ name: 'customer_phone', value: NATIONAL }, { name: 'campaign', value: 'spring' }], idempotency_key: 'typed-1' },
    })
    expect(placed).toMatchObject({ ok: true })
    const result = await runFollowUps(rt, { conversationIds: ['c2_1'] }, dry())
    expect(result.plans).toEqual([])
    expect(result.skips.map((s) => [s.conversationId, s.code])).toEqual([['c2_1', 'call_pending']])
  })

  it('rows an older version wrote without a key are found by their number as written until the fill gives them one', async () => {
    // As 0.26 wrote them: no contact_key.
    await noAnswer('c1_1', NATIONAL, 5)
    await noAnswer('c2_1', NATIONAL, 3)
    await rt.store.db.updateTable('conversations').set({ contact_key: null }).execute()
    await noAnswer('c3_1', E164, 1)
    await placeCall(rt, { apiKey: 'sk_test_acme', request: { agent_id: 101, parameters: [{ name: 'customer_phone', value: NATIONAL }], idempotency_key: 'old-1' } })
    await rt.store.db.updateTable('calls').set({ customer_key: null }).execute()

    // Asked about an old row: its key is made from its number, so the newer row is found as well as the old ones.
    const byOld = await runFollowUps(rt, { conversationIds: ['c2_1'] }, dry())
    expect(byOld.skips.map((s) => [s.conversationId, s.code])).toEqual([['c2_1', 'not_latest']])
    // Asked about the new one before the fill: the old rows are written otherwise and have no key yet.
    const before = await runFollowUps(rt, { conversationIds: ['c3_1'] }, dry())
    expect(before.plans.map((p) => p.attempt)).toEqual([2])

    expect(await fillContactKeys(rt, { chunk: 1 })).toEqual({ conversations: 2, calls: 1, more: false, skipped: false })
    const keys = await rt.store.db.selectFrom('conversations').select(['conversation_id', 'contact_key']).orderBy('conversation_id').execute()
    expect(keys).toEqual([{ conversation_id: 'c1_1', contact_key: E164 }, { conversation_id: 'c2_1', contact_key: E164 }, { conversation_id: 'c3_1', contact_key: E164 }])
    expect(await rt.store.db.selectFrom('calls').select('customer_key').execute()).toEqual([{ customer_key: E164 }])
    const after = await runFollowUps(rt, { conversationIds: ['c3_1'] }, dry())
    expect(after.plans).toEqual([])
    expect(after.skips.map((s) => [s.conversationId, s.code])).toEqual([['c3_1', 'attempt_cap']])
    // Nothing left: the next run fills nothing.
    expect(await fillContactKeys(rt)).toEqual({ conversations: 0, calls: 0, more: false, skipped: false })
  })

  it("a recipe's data.conversations({ contactNumber }) and data.calls({ customerPhone }) find the contact however it was written", async () => {
    await noAnswer('c1_1', NATIONAL, 5)
    await noAnswer('c2_1', E164, 3)
    await noAnswer('o1_1', '+919876543121', 2)
    await placeCall(rt, { apiKey: 'sk_test_acme', request: { agent_id: 101, parameters: [{ name: 'customer_phone', value: SPACED }], idempotency_key: 'q-1' } })
    // One as an older version wrote it, not yet filled: found by the spelling asked about.
    await rt.store.db.updateTable('conversations').set({ contact_key: null }).where('conversation_id', '=', 'c1_1').execute()
    const data = createQueries(rt)
    const ids = async (contactNumber: string) => (await data.conversations({ contactNumber })).map((c) => c.conversation_id).sort()
    expect(await ids(E164)).toEqual(['c2_1'])
    expect(await ids(NATIONAL)).toEqual(['c1_1', 'c2_1'])
    await fillContactKeys(rt)
    expect(await ids(E164)).toEqual(['c1_1', 'c2_1'])
    expect(await ids(SPACED)).toEqual(['c1_1', 'c2_1'])
    expect((await data.calls({ customerPhone: NATIONAL })).map((c) => [c.idempotency_key, c.customer_phone])).toEqual([['q-1', SPACED]])
    // The dashboard's Calls page filter (listCalls) as well.
    expect((await listCalls(rt, { customerPhone: '98765-43120' })).map((c) => c.idempotency_key)).toEqual(['q-1'])
    // The key is the table's own: not part of what a recipe reads.
    expect(Object.keys((await data.conversations({ contactNumber: E164 }))[0]!)).not.toContain('contact_key')
    expect(Object.keys((await data.calls({}))[0]!)).not.toContain('customer_key')
  })

  it('the fill walks each table in chunks: every row of a number filled, rows with no number left alone, nothing read twice', async () => {
    // 25 conversations over 5 numbers written two ways, and one with no number (a to_phone too long to keep).
    for (let i = 0; i < 25; i++) await noAnswer(`f${String(i).padStart(2, '0')}_1`, i % 2 ? `098765 4310${i % 5}` : `+91987654310${i % 5}`, 30 - i)
    await rt.store.db.updateTable('conversations').set({ contact_number: null }).where('conversation_id', '=', 'f24_1').execute()
    await rt.store.db.updateTable('conversations').set({ contact_key: null }).execute()
    expect(await fillContactKeys(rt, { chunk: 4 })).toEqual({ conversations: 24, calls: 0, more: false, skipped: false })
    const rows = await rt.store.db.selectFrom('conversations').select(['conversation_id', 'contact_key']).orderBy('conversation_id').execute()
    expect(rows.filter((r) => r.contact_key === null).map((r) => r.conversation_id)).toEqual(['f24_1'])
    expect(new Set(rows.map((r) => r.contact_key).filter(Boolean))).toEqual(new Set([0, 1, 2, 3, 4].map((d) => `+91987654310${d}`)))
    expect(await fillContactKeys(rt, { chunk: 4 })).toMatchObject({ conversations: 0, calls: 0 })
  })

  it('a number that does not read as one is its own key, as written; a later event on an old row gives it its key', async () => {
    await noAnswer('x1_1', 'ext. 42 at reception', 2)
    expect(await rt.store.db.selectFrom('conversations').select('contact_key').executeTakeFirstOrThrow()).toEqual({ contact_key: 'ext. 42 at reception' })
    await noAnswer('c1_1', NATIONAL, 5)
    await rt.store.db.updateTable('conversations').set({ contact_key: null }).where('conversation_id', '=', 'c1_1').execute()
    // The same conversation reported again (a redelivered or later event): the row the older version wrote gets its key.
    await noAnswer('c1_1', NATIONAL, 4)
    expect(await rt.store.db.selectFrom('conversations').select('contact_key').where('conversation_id', '=', 'c1_1').executeTakeFirstOrThrow()).toEqual({ contact_key: E164 })
    expect(await fillContactKeys(rt)).toMatchObject({ conversations: 0, calls: 0 })
  })
})
