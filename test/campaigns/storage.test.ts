import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest'
import { parse } from 'csv-parse/sync'
import {
  addToDnc,
  isBlocked,
  launchBatch,
  loadDncList,
  loadFollowUpInputs,
  planFollowUps,
  prepareBatch,
  optOutFromEvent,
  removeFromDnc,
  runFollowUps,
  scheduleCall,
  type ConversationInput,
} from '../../src/campaigns/index.ts'
import { numbersToScreen } from '../../src/campaigns/plan-follow-ups.ts'
import { contactKey } from '../../src/campaigns/contact-key.ts'
import type { ConversationsTable } from '../../src/db/schema.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import type { Effects } from '../../src/effects.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { startRecordingUpstream, uploadedCsv, type RecordingUpstream } from './recording-upstream.ts'

const PHONE = '+919876543210'
// 22:00 IST, 10 March 2026: a no_answer now gets its follow-up at 09:00 IST tomorrow.
const EVENING = Date.parse('2026-03-10T16:30:00Z')
const NEXT_OPENING = '2026-03-11T03:30:00.000Z'
// 11:00 IST the next day: inside the calling window, when batches go out.
const MORNING = Date.parse('2026-03-11T05:30:00Z')
const toMorning = (rt: TestRuntime) => (rt.clock as ReturnType<typeof createManualClock>).advanceTo(MORNING)

let upstream: RecordingUpstream
beforeAll(async () => {
  upstream = await startRecordingUpstream()
})
afterAll(async () => {
  await upstream.close()
})

const dry = (): Effects => ({ dryRun: true, plan: [] })
const live = (): Effects => ({ dryRun: false, plan: [] })

/** A conversation as the read model writes it: its contact key made from its number (src/campaigns/contact-key.ts). */
function conversationRow(over: Partial<ConversationsTable> = {}): ConversationsTable {
  const number = over.contact_number === undefined ? PHONE : over.contact_number
  return {
    conversation_id: 'e36853de-9cbb-441e-ad75-d3c8ac82abfb_1',
    agent_id: 101,
    contact_number: PHONE,
    contact_key: contactKey(number, 'IN'),
    status: 'no_answer',
    terminal: 1,
    duration_seconds: null,
    started_at: EVENING - 60_000,
    ended_at: EVENING,
    failure_reason: null,
    trace_id: 'trace-original',
    from_phone: '+918035550101',
    recording_url: null,
    transcript: null,
    results: JSON.stringify({ stage_id: 'intro' }),
    call_parameters: JSON.stringify({ customer_phone: PHONE, name: 'Asha' }),
    retry: null,
    retry_context: null,
    last_event_at: EVENING,
    last_event_id: 'evt_1',
    source: 'webhook',
    created_at: EVENING - 60_000,
    updated_at: EVENING,
    ...over,
  }
}

describeEachDialect('campaign toolkit with storage', (dialect) => {
  let rt: TestRuntime
  beforeEach(async () => {
    upstream.requests.length = 0
    rt = await createTestRuntime({
      dialect,
      clock: createManualClock(EVENING + 60_000),
      env: { VOICE_API_KEY: 'sk_test_acme', VOICE_API_BASE_URL: upstream.url, DEFAULT_COUNTRY: 'IN', RECIPES_TIMEZONE: 'Asia/Kolkata' },
    })
  })
  afterEach(async () => {
    await rt.close()
  })

  async function seedNoAnswer(over: Partial<ConversationsTable> = {}) {
    await rt.store.db.insertInto('conversations').values(conversationRow(over)).execute()
  }

  it('schedules a no_answer follow-up once: a re-run places no second call', async () => {
    await seedNoAnswer()
    const first = await runFollowUps(rt, { recipe: 'no-answer-followup' }, live())
    expect(first.summary).toMatchObject({ queued: 1, failed: 0 })
    // An Indian number: its zone is its country's, nothing guessed.
    expect(first.warnings).toEqual([])
    expect(upstream.requests).toHaveLength(1)
    const sent = JSON.parse(upstream.requests[0]!.body.toString('utf8'))
    expect(sent).toEqual({
      agent_id: 101,
      parameters: [
        { name: 'customer_phone', value: PHONE },
        { name: 'name', value: 'Asha' },
      ],
      conversation_id: 'e36853de-9cbb-441e-ad75-d3c8ac82abfb_1',
      idempotency_key: first.plans[0]!.idempotencyKey,
      retry_context: { collected_data: { name: 'Asha', stage_id: 'intro' }, retry_stage_id: 'intro' },
      scheduled_for: NEXT_OPENING,
    })
    const rows = await rt.store.db.selectFrom('calls').selectAll().execute()
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({
      status: 'scheduled',
      recipe: 'no-answer-followup',
      campaign: 'agent:101',
      previous_conversation_id: 'e36853de-9cbb-441e-ad75-d3c8ac82abfb_1',
      scheduled_for: Date.parse(NEXT_OPENING),
      idempotency_key: first.plans[0]!.idempotencyKey,
    })

    // The sweep runs again: the ledger shows the follow-up, so the conversation is no longer a candidate.
    const second = await runFollowUps(rt, { recipe: 'no-answer-followup' }, live())
    expect(second.plans).toEqual([])
    expect(second.skips).toEqual([])
    expect(upstream.requests).toHaveLength(1)
    // Named explicitly (an event redelivered), it is decided and skipped as followed up.
    const named = await runFollowUps(rt, { recipe: 'no-answer-followup', conversationIds: ['e36853de-9cbb-441e-ad75-d3c8ac82abfb_1'] }, live())
    expect(named.skips).toMatchObject([{ code: 'already_followed_up' }])
    expect(upstream.requests).toHaveLength(1)
  })

  it('a plan made from stale inputs (e.g. on another replica) is refused by its deterministic key, with no upstream request', async () => {
    await seedNoAnswer()
    const inputs = await loadFollowUpInputs(rt, { since: 0 })
    const dnc = await loadDncList(rt)
    const opts = { defaultCountry: 'IN', timeZone: 'Asia/Kolkata' }
    const planA = planFollowUps({ ...inputs, dnc, now: rt.clock.now(), options: opts }).plans[0]!
    const planB = planFollowUps({ ...inputs, dnc, now: rt.clock.now(), options: opts }).plans[0]!
    expect(planB.idempotencyKey).toBe(planA.idempotencyKey)
    expect((await scheduleCall(rt, planA, live(), { recipe: 'r' })).status).toBe('queued')
    const again = await scheduleCall(rt, planB, live(), { recipe: 'r' })
    expect(again.status).toBe('duplicate')
    expect(upstream.requests).toHaveLength(1)
    expect(await rt.store.db.selectFrom('calls').selectAll().execute()).toHaveLength(1)
  })

  it('a follow-up of a follow-up continues the chain and the shared cap stops the fourth call', async () => {
    await seedNoAnswer()
    const first = await runFollowUps(rt, {}, live())
    const trace1 = (await rt.store.db.selectFrom('calls').select('trace_id').executeTakeFirstOrThrow()).trace_id!
    // The follow-up ran at 09:00 and was busy; the provider continued the chain.
    await seedNoAnswer({ conversation_id: 'e36853de-9cbb-441e-ad75-d3c8ac82abfb_2', trace_id: trace1, status: 'busy', ended_at: Date.parse(NEXT_OPENING) + 60_000, updated_at: Date.parse(NEXT_OPENING) + 60_000 })
    await (rt.clock as ReturnType<typeof createManualClock>).advanceTo(Date.parse(NEXT_OPENING) + 5 * 60_000)
    const second = await runFollowUps(rt, {}, live())
    expect(second.plans.map((p) => [p.previousConversationId, p.attempt])).toEqual([['e36853de-9cbb-441e-ad75-d3c8ac82abfb_2', 3]])
    // busy → at least 2 h later
    expect(second.plans[0]!.scheduledFor).toBe(Date.parse(NEXT_OPENING) + 60_000 + 2 * 3_600_000)
    expect(JSON.parse(upstream.requests[1]!.body.toString('utf8')).conversation_id).toBe('e36853de-9cbb-441e-ad75-d3c8ac82abfb_2')
    expect(second.plans[0]!.idempotencyKey).not.toBe(first.plans[0]!.idempotencyKey)

    const trace2 = (await rt.store.db.selectFrom('calls').select('trace_id').where('trace_id', '!=', trace1).executeTakeFirstOrThrow()).trace_id!
    const later = Date.parse(NEXT_OPENING) + 3 * 3_600_000
    await seedNoAnswer({ conversation_id: 'e36853de-9cbb-441e-ad75-d3c8ac82abfb_3', trace_id: trace2, status: 'no_answer', ended_at: later, updated_at: later })
    await (rt.clock as ReturnType<typeof createManualClock>).advanceTo(later + 60_000)
    const third = await runFollowUps(rt, {}, live())
    expect(third.plans).toEqual([])
    expect(third.skips.find((s) => s.conversationId.endsWith('_3'))).toMatchObject({ code: 'attempt_cap' })
    expect(upstream.requests).toHaveLength(2)
  })

  it('the sweep works candidates a page at a time: each is decided once, history spans pages, completed calls are not read', async () => {
    const rows: ConversationsTable[] = []
    for (let i = 0; i < 1_100; i++) {
      const phone = `+9198000${String(i).padStart(5, '0')}`
      rows.push(conversationRow({ conversation_id: `p${i}_1`, trace_id: `tp_${i}`, contact_number: phone, call_parameters: JSON.stringify({ customer_phone: phone }), updated_at: EVENING - 1_000 + i }))
    }
    // One contact with an early no_answer (first page) and a later one (last page): only the later is followed up.
    rows.push(conversationRow({ conversation_id: 'y_1', trace_id: 'ty1', ended_at: EVENING - 3_600_000, updated_at: EVENING - 3_600_000 }))
    rows.push(conversationRow({ conversation_id: 'y_2', trace_id: 'ty2', updated_at: EVENING + 1 }))
    rows.push(conversationRow({ conversation_id: 'c_1', trace_id: 'tc1', contact_number: '+919800099999', status: 'completed' }))
    for (let i = 0; i < rows.length; i += 200) await rt.store.db.insertInto('conversations').values(rows.slice(i, i + 200)).execute()

    const result = await runFollowUps(rt, {}, dry())
    expect(result.plans).toHaveLength(1_101)
    expect(new Set(result.plans.map((p) => p.previousConversationId)).size).toBe(1_101)
    expect(result.plans.find((p) => p.previousConversationId === 'y_2')).toMatchObject({ attempt: 3 })
    expect(result.skips).toEqual([expect.objectContaining({ conversationId: 'y_1', code: 'not_latest' })])
    expect(upstream.requests).toHaveLength(0)
  })

  it('a dry run plans the call and sends nothing, writes nothing', async () => {
    await seedNoAnswer()
    const effects = dry()
    const result = await runFollowUps(rt, { recipe: 'no-answer-followup' }, effects)
    expect(result.summary.planned).toBe(1)
    expect(effects.plan).toEqual([
      {
        kind: 'call',
        request: result.plans[0]!.request,
        recipe: 'no-answer-followup',
        campaign: 'agent:101',
        note: `follow-up 2/3 after no_answer (e36853de-9cbb-441e-ad75-d3c8ac82abfb_1)`,
      },
    ])
    expect(upstream.requests).toHaveLength(0)
    expect(await rt.store.db.selectFrom('calls').selectAll().execute()).toEqual([])
  })

  it('warns when follow-ups to numbers of a country with several time zones had none given (timed in the recipe\'s zone)', async () => {
    await seedNoAnswer({ contact_number: '+12133734253', call_parameters: JSON.stringify({ customer_phone: '+12133734253' }) })
    const result = await runFollowUps(rt, { recipe: 'no-answer-followup' }, dry())
    expect(result.summary.planned).toBe(1)
    expect(result.warnings).toEqual([
      `follow-ups to numbers of countries with several time zones have no timezone parameter (US: 1): their calling window is taken in ${rt.config.recipes.timezone}; give the calls a timezone parameter (an IANA zone, or EST, CT, PT…) to call each in their own`,
    ])
  })

  it('do-not-call: the table blocks follow-ups and direct calls; results asking not to be called add the number (live runs only)', async () => {
    await seedNoAnswer({ conversation_id: 'x_1', status: 'busy', results: JSON.stringify({ intent: 'do_not_call' }) })
    await runFollowUps(rt, {}, dry())
    expect(await isBlocked(rt, '09876543210')).toBe(false)
    await runFollowUps(rt, {}, live())
    expect(await isBlocked(rt, '09876543210')).toBe(true)
    expect(await rt.store.db.selectFrom('dnc').selectAll().execute()).toMatchObject([{ phone: PHONE, source: 'conversation:x_1' }])

    await seedNoAnswer({ conversation_id: 'y_1', contact_number: '+919876543211', trace_id: 't-y', updated_at: EVENING + 1 })
    expect((await addToDnc(rt, '+91 98765 43211', { reason: 'asked by email' })).added).toBe(true)
    expect((await addToDnc(rt, '09876543211')).added).toBe(false)
    const r = await runFollowUps(rt, {}, live())
    expect(r.skips.find((s) => s.conversationId === 'y_1')).toMatchObject({ code: 'dnc' })

    const direct = await scheduleCall(rt, { request: { agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543211' }] } }, live())
    expect(direct).toMatchObject({ status: 'blocked', reason: 'on the do-not-call list' })
    expect(upstream.requests).toHaveLength(0)
    expect(await removeFromDnc(rt, '+919876543211')).toBe(true)
    expect(await isBlocked(rt, '+919876543211')).toBe(false)
  })

  it('do-not-call on an event batch: the numbers of the batch\'s contacts are looked up, the contact\'s own or the one the call was placed with', async () => {
    // A long list: the run asks about its contacts' numbers, in the table and the file, not the whole list.
    await rt.store.db.insertInto('dnc').values(Array.from({ length: 300 }, (_, i) => ({ phone: `+91987650${String(i).padStart(4, '0')}`, reason: 'import', source: 'test', added_at: 0 }))).execute()
    await addToDnc(rt, '+919876543211', { reason: 'asked' })
    writeFileSync(join(rt.dataDir, 'dnc.csv'), '098765 43212\n')
    await seedNoAnswer({ conversation_id: 'own_1', contact_number: '+919876543211', trace_id: 't-own' })
    // No contact number on the conversation: the customer_phone it was called on (national form) is the contact.
    await seedNoAnswer({ conversation_id: 'param_1', contact_number: null, trace_id: 't-param', call_parameters: JSON.stringify({ customer_phone: '09876543212' }) })
    await seedNoAnswer({ conversation_id: 'free_1', contact_number: '+919876543213', trace_id: 't-free' })
    const r = await runFollowUps(rt, { conversationIds: ['own_1', 'param_1', 'free_1'] }, dry())
    expect(r.skips.filter((s) => s.code === 'dnc').map((s) => s.conversationId).sort()).toEqual(['own_1', 'param_1'])
    expect(r.plans.map((p) => p.previousConversationId)).toEqual(['free_1'])
    expect(numbersToScreen([{ contact_number: null, call_parameters: JSON.stringify({ customer_phone: '(213) 373-4253' }) }, { contact_number: '213 373 4254', call_parameters: null }] as ConversationInput[], { defaultCountry: 'US' })).toEqual(['+12133734253', '+12133734254'])
  })

  it('a DNC file (default $DATA_DIR/dnc.csv) is honoured along with the table', async () => {
    writeFileSync(join(rt.dataDir, 'dnc.csv'), 'phone\n098765 43210\nnot a number\n+1 (213) 373-4253\n')
    expect(await isBlocked(rt, '+919876543210')).toBe(true)
    expect(await isBlocked(rt, '+12133734253')).toBe(true)
    expect(await isBlocked(rt, '+919876543211')).toBe(false)
    expect(await isBlocked(rt, '+919876543210', { file: false })).toBe(false)
    expect((await loadDncList(rt)).size).toBe(2)
    // Edited while running: the next check sees it.
    writeFileSync(join(rt.dataDir, 'dnc.csv'), '+91 98765 43211\n')
    expect(await isBlocked(rt, '+919876543211')).toBe(true)
    expect(await isBlocked(rt, '+919876543210')).toBe(false)
  })

  it('reads the DNC file in the contacts\' country when the caller overrides DEFAULT_COUNTRY', async () => {
    const dncFile = join(rt.dataDir, 'dnc.csv')
    writeFileSync(dncFile, 'phone\n(213) 373-4253\n098765 43210\n')
    const path = join(rt.dataDir, 'us-contacts.csv')
    writeFileSync(path, 'phone,name\n213-373-4253,A\n+1 213 373 4254,B\n')
    const us = await prepareBatch(rt, path, { defaultCountry: 'US' })
    expect(us.rejects).toEqual([{ row: 2, raw: '213-373-4253', reason: 'on the do-not-call list' }])
    expect(us.rows.map((r) => r.customer_phone)).toEqual(['+12133734254'])
    expect(await isBlocked(rt, '(213) 373-4253', { defaultCountry: 'US' })).toBe(true)
    // For DEFAULT_COUNTRY (IN) the same file still holds the Indian number, not the American one: both readings are kept.
    expect(await isBlocked(rt, '+919876543210')).toBe(true)
    expect(await isBlocked(rt, '+12133734253')).toBe(false)
    expect(await isBlocked(rt, '+12133734253', { defaultCountry: 'US' })).toBe(true)
    // Edited while running: each reading sees it.
    writeFileSync(dncFile, '213 373 4254\n')
    expect((await prepareBatch(rt, path, { defaultCountry: 'US' })).rejects).toEqual([{ row: 3, raw: '+1 213 373 4254', reason: 'on the do-not-call list' }])
    expect(await isBlocked(rt, '+919876543210')).toBe(false)

    // A follow-up sweep for US contacts reads it as US numbers too.
    await seedNoAnswer({ conversation_id: 'us_1', contact_number: '+12133734254', call_parameters: JSON.stringify({ customer_phone: '+12133734254' }) })
    const swept = await runFollowUps(rt, { defaultCountry: 'US', timeZone: 'America/Los_Angeles' }, dry())
    expect(swept.skips.find((s) => s.conversationId === 'us_1')).toMatchObject({ code: 'dnc' })
    expect(swept.plans).toEqual([])

    // scheduleCall and launchBatch read a national-form number in the country they are given, and the DNC file in it
    // too: with DEFAULT_COUNTRY (IN) alone, 213-373-4255 became the Indian +91 2133734255 and was called.
    writeFileSync(dncFile, 'phone\n(213) 373-4254\n')
    const call = (phone: string) => ({ request: { agent_id: 101, parameters: [{ name: 'customer_phone', value: phone }] }, timeZone: 'America/New_York' })
    const placed = await scheduleCall(rt, call('213-373-4255'), dry(), { defaultCountry: 'US' })
    expect(placed.request.parameters[0]).toEqual({ name: 'customer_phone', value: '+12133734255' })
    expect(await scheduleCall(rt, call('213-373-4254'), dry(), { defaultCountry: 'US' })).toMatchObject({ status: 'blocked' })
    const batch = await launchBatch(rt, { agentId: 101, name: 'us', rows: [{ customer_phone: '213-373-4254' }, { customer_phone: '213-373-4255', timezone: 'America/New_York' }], defaultCountry: 'US', window: false }, dry())
    expect(batch.rows.map((r) => r.customer_phone)).toEqual(['+12133734255'])
    expect(batch.rejects).toEqual([{ row: 1, raw: '213-373-4254', reason: 'on the do-not-call list' }])
  })

  it('an event whose results ask not to be called adds the number (once)', async () => {
    const event = (results: Record<string, unknown>) => ({
      event_id: 'evt_x',
      event_type: 'call.completed' as const,
      timestamp: '2026-03-10T16:30:00Z',
      data: {
        call: {
          agent_id: 101, call_parameters: {}, conversation_id: 'z_1', duration_seconds: 30, started_at: null, ended_at: null,
          failure_reason: null, from_phone: null, to_phone: '+919876543219', recording_url: null, status: 'completed', trace_id: 't',
        },
        results,
      },
    })
    expect(await optOutFromEvent(rt, event({ intent: 'paid' }))).toBe(false)
    expect(await isBlocked(rt, '+919876543219')).toBe(false)
    expect(await optOutFromEvent(rt, event({ do_not_call: true }))).toBe(true)
    expect(await optOutFromEvent(rt, event({ do_not_call: true }))).toBe(false)
    expect(await isBlocked(rt, '+919876543219')).toBe(true)
  })

  it('scheduleCall keeps a direct call inside the window and refuses one beyond 30 days', async () => {
    const tooLate = new Date(rt.clock.now() + 31 * 24 * 3_600_000).toISOString()
    const far = await scheduleCall(rt, { request: { agent_id: 101, parameters: [{ name: 'customer_phone', value: PHONE }], scheduled_for: tooLate } }, live())
    expect(far.status).toBe('blocked')
    const windowed = await scheduleCall(rt, { request: { agent_id: 101, parameters: [{ name: 'customer_phone', value: PHONE }] }, timeZone: 'Asia/Kolkata' }, dry())
    expect(windowed.request.scheduled_for).toBe(NEXT_OPENING)
    expect(upstream.requests).toHaveLength(0)
  })

  it('loads one conversation’s contact history for an event-triggered run', async () => {
    await seedNoAnswer({ conversation_id: 'a_1', trace_id: 'ta', ended_at: EVENING - 3_600_000, updated_at: EVENING - 3_600_000 })
    await seedNoAnswer({ conversation_id: 'a_2', trace_id: 'tb', contact_number: '09876543210' })
    await seedNoAnswer({ conversation_id: 'b_1', trace_id: 'tc', contact_number: '+919876543299' })
    const inputs = await loadFollowUpInputs(rt, { since: 0, conversationIds: ['a_2'] })
    expect(inputs.conversations.map((c) => c.conversation_id).sort()).toEqual(['a_1', 'a_2'])
    const r = await runFollowUps(rt, { conversationIds: ['a_2'] }, dry())
    expect(r.plans.map((p) => [p.previousConversationId, p.attempt])).toEqual([['a_2', 3]])
    // A named conversation older than `since` is read in full all the same; its contact's history only as recent as `since`.
    await seedNoAnswer({ conversation_id: 'a_3', trace_id: 'td' })
    const older = await loadFollowUpInputs(rt, { since: EVENING - 3_600_000 + 1, conversationIds: ['a_1'] })
    // a_2 is the same contact written otherwise (09876543210): part of a_1's history too (it was missed before 0.27.0).
    expect(older.conversations.map((c) => c.conversation_id).sort()).toEqual(['a_1', 'a_2', 'a_3'])
    const a1 = older.conversations.find((c) => c.conversation_id === 'a_1')!
    expect(a1).toMatchObject({ status: 'no_answer', trace_id: 'ta', updated_at: EVENING - 3_600_000 })
    expect(a1.call_parameters).toBe(inputs.conversations.find((c) => c.conversation_id === 'a_1')!.call_parameters)
  })

  it('prepares a batch from a CSV with the DNC table, and launches it (dry run: plan only; live: the upload)', async () => {
    await toMorning(rt)
    await addToDnc(rt, '9876543212')
    const path = join(rt.dataDir, 'contacts.csv')
    writeFileSync(path, '\uFEFFMobile,Name\n9876543210,A\n09876543210,A2\n+,B\n9876543212,C\n9876543213,"D, E"\n')
    const prepared = await prepareBatch(rt, path)
    expect(prepared.rejects).toEqual([
      { row: 3, raw: '09876543210', reason: 'duplicate of row 2' },
      { row: 4, raw: '+', reason: 'not a phone number' },
      { row: 5, raw: '9876543212', reason: 'on the do-not-call list' },
    ])

    const effects = dry()
    const planned = await launchBatch(rt, { agentId: 101, name: 'March list', rows: prepared.rows, rejects: prepared.rejects }, effects)
    expect(planned).toMatchObject({ batch: null, skipped: 'dry_run' })
    expect(effects.plan).toEqual([
      {
        kind: 'batch',
        agent_id: 101,
        name: 'March list',
        // The batch's name rides along as each call's `campaign` parameter: the report groups by it.
        rows: [
          { customer_phone: '+919876543210', Name: 'A', campaign: 'March list' },
          { customer_phone: '+919876543213', Name: 'D, E', campaign: 'March list' },
        ],
        rejects: prepared.rejects,
      },
    ])
    expect(upstream.requests).toHaveLength(0)

    // Rows from code are checked too: a number added to the DNC list since preparing is left out.
    await addToDnc(rt, '+919876543213')
    const launched = await launchBatch(rt, { agentId: 101, name: 'March list', rows: prepared.rows }, live())
    expect(launched.batch).toMatchObject({ name: 'March list', agent_id: 101 })
    expect(launched.rejects).toEqual([{ row: 2, raw: '+919876543213', reason: 'on the do-not-call list' }])
    expect(upstream.requests).toHaveLength(1)
    expect(upstream.requests[0]!.path).toBe('/v1/batch-call')
    expect(upstream.requests[0]!.headers.authorization).toBe('Bearer sk_test_acme')
    expect(parse(uploadedCsv(upstream.requests[0]!), { columns: true })).toEqual([{ customer_phone: '+919876543210', Name: 'A', campaign: 'March list' }])
  })

  it('names the campaign in a `campaign` column: the batch name by default, a row\'s own kept, or none on request', async () => {
    await toMorning(rt)
    const rows: Array<Record<string, string>> = [{ customer_phone: '+919876543210', Name: 'A' }, { customer_phone: '+919876543211', Name: 'B', campaign: 'spring' }]
    // With the caller's column order (as prepareBatch gives it) the column is added at the end.
    await launchBatch(rt, { agentId: 101, name: 'April list', rows, columns: ['customer_phone', 'Name'] }, live())
    expect(parse(uploadedCsv(upstream.requests.at(-1)!), { columns: true })).toEqual([
      { customer_phone: '+919876543210', Name: 'A', campaign: 'April list' },
      { customer_phone: '+919876543211', Name: 'B', campaign: 'spring' },
    ])
    await launchBatch(rt, { agentId: 101, name: 'April list', rows, campaign: 'april-2026' }, live())
    expect((parse(uploadedCsv(upstream.requests.at(-1)!), { columns: true }) as Array<Record<string, string>>).map((r) => r.campaign)).toEqual(['april-2026', 'spring'])
    await launchBatch(rt, { agentId: 101, name: 'April list', rows: [rows[0]!], campaign: false }, live())
    expect(parse(uploadedCsv(upstream.requests.at(-1)!), { columns: true })).toEqual([{ customer_phone: '+919876543210', Name: 'A' }])
  })

  it('holds back the rows whose recipient\'s calling window is closed: the provider calls a batch at once', async () => {
    // 22:01 in India, 11:31 in New York: the Indian rows wait for 09:00 IST, the American one (zone from its
    // `timezone` column: the US has several) goes out now.
    const rows: Array<Record<string, string>> = [
      { customer_phone: '+919876543210', Name: 'A' },
      { customer_phone: '+12125550123', Name: 'B', timezone: 'America/New_York' },
      { customer_phone: '09876543211', Name: 'C', campaign: 'spring' },
    ]
    const r = await launchBatch(rt, { agentId: 101, name: 'late list', rows }, live())
    expect(r.batch).toMatchObject({ name: 'late list' })
    expect(r.rows.map((row) => row.customer_phone)).toEqual(['+12125550123'])
    // Deferred rows come back normalized, with their campaign, and when their window opens.
    expect(r.deferred).toEqual([
      { row: { customer_phone: '+919876543210', Name: 'A', campaign: 'late list' }, opensAt: NEXT_OPENING },
      { row: { customer_phone: '+919876543211', Name: 'C', campaign: 'spring' }, opensAt: NEXT_OPENING },
    ])
    expect(upstream.requests).toHaveLength(1)
    expect((parse(uploadedCsv(upstream.requests[0]!), { columns: true }) as Array<Record<string, string>>).map((row) => row.customer_phone)).toEqual(['+12125550123'])
    // Nothing in its window: nothing uploaded.
    const none = await launchBatch(rt, { agentId: 101, name: 'late list', rows: [rows[0]!] }, live())
    expect(none).toMatchObject({ batch: null, skipped: 'outside_window', rows: [] })
    expect(none.deferred).toHaveLength(1)
    expect(upstream.requests).toHaveLength(1)
    // A team that takes the hour on itself says so.
    const anyHour = await launchBatch(rt, { agentId: 101, name: 'late list', rows: [rows[0]!], window: false }, live())
    expect(anyHour).toMatchObject({ batch: { name: 'late list' }, deferred: [] })
    expect(upstream.requests).toHaveLength(2)
  })

  it('holds back the rows whose window closes within the hour: the provider works through a batch over time', async () => {
    // 16:31 UTC: 20:31 in Dubai (29 minutes before its close), 19:31 in Moscow (89 minutes), 11:31 in New York.
    const rows: Array<Record<string, string>> = [
      { customer_phone: '+12125550124', Name: 'Dubai', timezone: 'Asia/Dubai' },
      { customer_phone: '+12125550125', Name: 'Moscow', timezone: 'Europe/Moscow' },
      { customer_phone: '+12125550126', Name: 'New York', timezone: 'America/New_York' },
    ]
    const r = await launchBatch(rt, { agentId: 101, name: 'evening list', rows }, live())
    expect(r.rows.map((row) => row.Name)).toEqual(['Moscow', 'New York'])
    // The next opening after the close: 09:00 tomorrow in Dubai.
    expect(r.deferred).toEqual([{ row: { ...rows[0], campaign: 'evening list' }, opensAt: '2026-03-11T05:00:00.000Z' }])
    // A wider margin holds Moscow back too; none uploads every row whose window is open.
    const wide = await launchBatch(rt, { agentId: 101, name: 'evening list', rows, closingMarginMinutes: 120 }, live())
    expect(wide.rows.map((row) => row.Name)).toEqual(['New York'])
    const none = await launchBatch(rt, { agentId: 101, name: 'evening list', rows, closingMarginMinutes: 0 }, live())
    expect(none.rows.map((row) => row.Name)).toEqual(['Dubai', 'Moscow', 'New York'])
  })

  it('a batch with no callable rows is not uploaded', async () => {
    const r = await launchBatch(rt, { agentId: 101, name: 'empty', rows: [{ customer_phone: 'nope' }] }, live())
    expect(r).toMatchObject({ batch: null, skipped: 'no_rows', rejects: [{ row: 1, raw: 'nope', reason: 'not a phone number (contains letters)' }] })
    expect(upstream.requests).toHaveLength(0)
  })
})
