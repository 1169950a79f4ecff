import { describe, expect, it } from 'vitest'
import {
  followUpKey,
  planFollowUps,
  type CallInput,
  type ConversationInput,
  type FollowUpInput,
  type FollowUpOptions,
} from '../../src/campaigns/index.ts'

/** The planner is pure: tests hand it rows as the database holds them and a `now`. */
const PHONE = '+919876543210'
const t = (iso: string) => Date.parse(iso)
// 22:00 IST on 10 March 2026.
const EVENING = t('2026-03-10T16:30:00Z')

let seq = 0
type Json = 'results' | 'call_parameters' | 'retry' | 'retry_context'
function conversation(over: Partial<Omit<ConversationInput, Json>> & Partial<Record<Json, unknown>> = {}): ConversationInput {
  seq++
  const json = (v: unknown) => (v === undefined ? null : typeof v === 'string' ? v : JSON.stringify(v))
  return {
    conversation_id: `c0a80000-0000-4000-8000-${String(seq).padStart(12, '0')}_1`,
    agent_id: 101,
    contact_number: PHONE,
    status: 'no_answer',
    terminal: 1,
    started_at: EVENING - 60_000,
    ended_at: EVENING,
    updated_at: EVENING,
    trace_id: `trace-${seq}`,
    ...over,
    results: json(over.results),
    call_parameters: json(over.call_parameters ?? { customer_phone: '09876543210', name: 'Asha' }),
    retry: json(over.retry),
    retry_context: json(over.retry_context),
  }
}

function call(over: Partial<CallInput> = {}): CallInput {
  seq++
  return {
    id: `call-${seq}`,
    agent_id: 101,
    customer_phone: PHONE,
    trace_id: `trace-call-${seq}`,
    conversation_id: null,
    previous_conversation_id: null,
    recipe: null,
    campaign: null,
    status: 'initiated',
    created_at: EVENING - 120_000,
    scheduled_for: null,
    parameters: JSON.stringify([{ name: 'customer_phone', value: PHONE }]),
    ...over,
  }
}

function plan(conversations: ConversationInput[], extra: Partial<FollowUpInput> & { options?: FollowUpOptions } = {}) {
  return planFollowUps({
    conversations,
    calls: extra.calls ?? [],
    dnc: extra.dnc ?? new Set<string>(),
    now: extra.now ?? EVENING + 60_000,
    options: { defaultCountry: 'IN', timeZone: 'Asia/Kolkata', ...extra.options },
  })
}

describe('planFollowUps', () => {
  it('plans a no_answer follow-up at the next window opening, continuing the chain with retry_context', () => {
    const c = conversation({
      call_parameters: { customer_phone: '09876543210', name: 'Asha', campaign: 'renewals', language: 'hi-IN' },
      results: { amount_due: 1200, stage_id: 'greeting', empty: '' },
      retry_context: { collected_data: { earlier: 'yes', amount_due: 900 }, retry_initial_message: 'Hello again' },
    })
    const { plans, skips } = plan([c])
    expect(skips).toEqual([])
    expect(plans).toHaveLength(1)
    const p = plans[0]!
    // 22:00 IST + 1 h = 23:00 IST, outside the window → 09:00 IST next day.
    expect(new Date(p.scheduledFor).toISOString()).toBe('2026-03-11T03:30:00.000Z')
    expect(p).toMatchObject({ campaign: 'renewals', phone: PHONE, attempt: 2, maxAttempts: 3, timeZone: 'Asia/Kolkata', previousConversationId: c.conversation_id })
    expect(p.idempotencyKey).toBe(followUpKey('renewals', PHONE, 2))
    expect(p.idempotencyKey).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(p.request).toEqual({
      agent_id: 101,
      parameters: [
        { name: 'customer_phone', value: PHONE },
        { name: 'name', value: 'Asha' },
        { name: 'campaign', value: 'renewals' },
        { name: 'language', value: 'hi-IN' },
      ],
      conversation_id: c.conversation_id,
      idempotency_key: p.idempotencyKey,
      retry_context: {
        // parameters, then what earlier retries collected, then this call's results (newest wins)
        collected_data: { name: 'Asha', campaign: 'renewals', language: 'hi-IN', earlier: 'yes', amount_due: 1200, stage_id: 'greeting' },
        retry_initial_message: 'Hello again',
        retry_language: 'hi-IN',
        retry_stage_id: 'greeting',
      },
      scheduled_for: '2026-03-11T03:30:00.000Z',
    })
  })

  it('is deterministic: the same inputs give the same plans and keys', () => {
    const c = conversation()
    expect(plan([c])).toEqual(plan([c]))
  })

  it('retry_context options override what the results say', () => {
    const c = conversation({ results: { language: 'en-IN', stage: 'kyc' } })
    const p = plan([c], { options: { retryContext: { initialMessage: ({ status }) => `We missed you (${status})`, stageId: 'restart' } } }).plans[0]!
    expect(p.retryContext).toEqual({
      collected_data: { name: 'Asha', language: 'en-IN', stage: 'kyc' },
      retry_initial_message: 'We missed you (no_answer)',
      retry_language: 'en-IN',
      retry_stage_id: 'restart',
    })
  })

  describe('timing', () => {
    // 10:00 IST
    const MORNING = t('2026-03-10T04:30:00Z')
    it('busy: never an immediate redial — at least 2 h after the call', () => {
      const c = conversation({ status: 'busy', ended_at: MORNING })
      const p = plan([c], { now: MORNING + 5 * 60_000 }).plans[0]!
      expect(p.scheduledFor).toBe(MORNING + 2 * 3_600_000)
      expect(p.request.scheduled_for).toBe(new Date(MORNING + 2 * 3_600_000).toISOString())
    })
    it('no_answer: 1 h after the call by default; gaps are configurable', () => {
      const c = conversation({ ended_at: MORNING })
      expect(plan([c], { now: MORNING }).plans[0]!.scheduledFor).toBe(MORNING + 3_600_000)
      expect(plan([c], { now: MORNING, options: { minGapMs: { no_answer: 4 * 3_600_000 } } }).plans[0]!.scheduledFor).toBe(MORNING + 4 * 3_600_000)
    })
    it('a follow-up already due inside the window is placed immediately (no scheduled_for)', () => {
      const c = conversation({ status: 'busy', ended_at: MORNING })
      const now = MORNING + 3 * 3_600_000
      const p = plan([c], { now }).plans[0]!
      expect(p.scheduledFor).toBe(now)
      expect(p.request.scheduled_for).toBeUndefined()
    })
    // "Due within a minute" was placed at once even when that minute was before the window opened: 08:59:30 local.
    it('due within a minute of the window opening, it is scheduled for the opening, not placed at once', () => {
      const end = t('2026-03-10T02:29:30Z') // 07:59:30 IST
      const now = end + 3_600_000 // due now, 08:59:30 IST
      const p = plan([conversation({ ended_at: end })], { now }).plans[0]!
      expect(p.request.scheduled_for).toBe('2026-03-10T03:30:00.000Z')
      expect(p.scheduledFor).toBe(t('2026-03-10T03:30:00Z'))
    })
    it('a due time of 20:59 local stays; 21:00 moves to 09:00 the next day', () => {
      const end = t('2026-03-10T14:29:00Z') // 19:59 IST
      expect(new Date(plan([conversation({ ended_at: end })], { now: end }).plans[0]!.scheduledFor).toISOString()).toBe('2026-03-10T15:29:00.000Z')
      const later = end + 60_000 // due 21:00 IST
      expect(new Date(plan([conversation({ ended_at: later })], { now: later }).plans[0]!.scheduledFor).toISOString()).toBe('2026-03-11T03:30:00.000Z')
    })
    it('uses the recipient’s zone: a US number with a timezone parameter waits for 09:00 there', () => {
      const c = conversation({ contact_number: '+12133734253', call_parameters: { customer_phone: '+12133734253', timezone: 'America/Los_Angeles' } })
      const p = plan([c]).plans[0]!
      // EVENING + 1 h = 17:30 UTC = 10:30 PDT: inside the Los Angeles window.
      expect(p.timeZone).toBe('America/Los_Angeles')
      expect(p.scheduledFor).toBe(EVENING + 3_600_000)
    })
    it('a US number with no timezone parameter is timed in the recipe\'s zone, and the plan says it was a guess', () => {
      // Followed up at 07:01 in Los Angeles without a word (a recipe author's probe); batches warned of the same case.
      const c = conversation({ contact_number: '+12133734253', call_parameters: { customer_phone: '+12133734253' } })
      const p = plan([c]).plans[0]!
      expect(p.timeZone).toBe('Asia/Kolkata')
      expect(p.timeZoneGuessed).toBe('US')
      expect(plan([conversation()]).plans[0]!.timeZoneGuessed).toBeUndefined()
    })
    it('the 30-day horizon: a follow-up due beyond it is not planned at all', () => {
      const day = 24 * 3_600_000
      const c = conversation({ ended_at: MORNING })
      const within = plan([c], { now: MORNING, options: { minGapMs: { no_answer: 29 * day } } })
      expect(within.plans).toHaveLength(1)
      expect(within.plans[0]!.scheduledFor - MORNING).toBe(29 * day)
      const beyond = plan([c], { now: MORNING, options: { minGapMs: { no_answer: 30 * day } } })
      expect(beyond.plans).toEqual([])
      expect(beyond.skips).toMatchObject([{ code: 'horizon', reason: expect.stringMatching(/beyond the provider's 30-day scheduling horizon/) }])
      // 29 days plus a push to the next window opening can also cross it.
      // Now 08:00 IST; due 29 d 13 h later = 21:00 IST → pushed to 09:00 the next day = 30 d 1 h ahead.
      const early = t('2026-03-10T02:30:00Z')
      const pushed = plan([conversation({ ended_at: early })], { now: early, options: { minGapMs: { no_answer: 29 * day + 13 * 3_600_000 } } })
      expect(pushed.skips.map((s) => s.code)).toEqual(['horizon'])
      const notPushed = plan([conversation({ ended_at: early })], { now: early, options: { minGapMs: { no_answer: 29 * day + 12 * 3_600_000 } } })
      expect(notPushed.plans).toHaveLength(1)
    })
  })

  describe('which outcomes are followed up', () => {
    it.each([
      ['completed', 'completed'],
      ['unreachable', 'unreachable'],
      ['failed', 'status'],
      ['socket_failure', 'status'],
      ['telephony_failed', 'status'],
      ['voicemail', 'status'],
    ])('%s → skipped (%s)', (status, code) => {
      const r = plan([conversation({ status })])
      expect(r.plans).toEqual([])
      expect(r.skips.map((s) => s.code)).toEqual([code])
    })
    it('technical failures may be followed up when enabled, sooner (10 min) — but unreachable never', () => {
      const MORNING = t('2026-03-10T04:30:00Z')
      const r = plan([conversation({ status: 'socket_failure', ended_at: MORNING })], { now: MORNING, options: { technicalFailures: true } })
      expect(r.plans[0]!.scheduledFor).toBe(MORNING + 10 * 60_000)
      expect(plan([conversation({ status: 'unreachable' })], { options: { technicalFailures: true } }).plans).toEqual([])
    })
    it('no follow-up while the platform says more attempts follow', () => {
      const r = plan([conversation({ retry: { attempt_number: 1, is_final_attempt: false, max_attempts: 3, next_retry_at: '2026-03-10T17:00:00Z' } })])
      expect(r.plans).toEqual([])
      expect(r.skips).toMatchObject([{ code: 'platform_retry', reason: 'the platform will retry after attempt 1 of 3 at 2026-03-10T17:00:00Z' }])
    })
    it('after the platform’s final attempt, its attempts count towards the cap', () => {
      const final2 = conversation({ retry: { attempt_number: 2, is_final_attempt: true, max_attempts: 2, next_retry_at: null } })
      expect(plan([final2]).plans[0]!.attempt).toBe(3)
      const final3 = conversation({ retry: { attempt_number: 3, is_final_attempt: true, max_attempts: 3, next_retry_at: null } })
      expect(plan([final3]).skips.map((s) => s.code)).toEqual(['attempt_cap'])
    })
    it('never for a number on the do-not-call list, or whose results ask not to be called (reported as an opt-out)', () => {
      expect(plan([conversation()], { dnc: new Set([PHONE]) }).skips.map((s) => s.code)).toEqual(['dnc'])
      const optOut = plan([conversation({ results: { intent: 'Opt-Out' } })])
      expect(optOut.skips.map((s) => s.code)).toEqual(['opted_out'])
      expect(optOut.optOuts).toEqual([{ phone: PHONE, conversationId: expect.any(String) }])
      const completed = plan([conversation({ status: 'completed', results: { do_not_call: 'yes' } })])
      expect(completed.optOuts.map((o) => o.phone)).toEqual([PHONE])
      expect(plan([conversation({ results: { do_not_call: false, intent: 'callback' } })]).plans).toHaveLength(1)
    })
    it('a conversation without a usable number is skipped with the reason', () => {
      const r = plan([conversation({ contact_number: '12345', call_parameters: {} })])
      expect(r.skips).toMatchObject([{ code: 'invalid_phone', reason: 'no valid phone number: not a valid IN number (wrong number of digits)' }])
    })
    it('only recent conversations are candidates (7 days by default)', () => {
      const old = conversation({ ended_at: EVENING - 8 * 24 * 3_600_000 })
      expect(plan([old])).toEqual({ plans: [], skips: [], optOuts: [] })
    })
  })

  describe('one shared attempt cap per contact per campaign', () => {
    it('counts the original and every follow-up, across no_answer and busy', () => {
      const original = call({ campaign: 'renewals', trace_id: 'T1', created_at: EVENING - 5 * 3_600_000 })
      const first = conversation({ trace_id: 'T1', status: 'no_answer', ended_at: EVENING - 4 * 3_600_000, conversation_id: 'aaaa_1' })
      const followUp = call({ campaign: 'renewals', recipe: 'no-answer-followup', trace_id: 'T2', previous_conversation_id: 'aaaa_1', created_at: EVENING - 4 * 3_600_000 + 1 })
      const second = conversation({ trace_id: 'T2', status: 'busy', ended_at: EVENING - 3_600_000, conversation_id: 'aaaa_2' })
      const r = plan([first, second], { calls: [original, followUp], now: t('2026-03-11T04:00:00Z') })
      expect(r.plans.map((p) => [p.previousConversationId, p.attempt, p.campaign])).toEqual([['aaaa_2', 3, 'renewals']])
      expect(r.plans[0]!.request.conversation_id).toBe('aaaa_2')
      expect(r.skips).toMatchObject([{ conversationId: 'aaaa_1', code: 'not_latest' }])

      const third = conversation({ trace_id: 'T3', status: 'no_answer', ended_at: EVENING, conversation_id: 'aaaa_3' })
      const followUp2 = call({ campaign: 'renewals', trace_id: 'T3', previous_conversation_id: 'aaaa_2', created_at: EVENING - 60_000 })
      const capped = plan([first, second, third], { calls: [original, followUp, followUp2], now: t('2026-03-11T04:00:00Z') })
      expect(capped.plans).toEqual([])
      expect(capped.skips.find((s) => s.conversationId === 'aaaa_3')).toMatchObject({ code: 'attempt_cap', reason: 'attempt cap reached (3 of 3 in campaign renewals)' })
    })
    it('the cap is configurable', () => {
      const c = conversation()
      expect(plan([c], { options: { maxAttempts: 1 } }).skips.map((s) => s.code)).toEqual(['attempt_cap'])
      expect(plan([c], { options: { maxAttempts: 5 } }).plans[0]!.maxAttempts).toBe(5)
    })
    it('campaign identity: the ledger row by trace id, else a campaign parameter, else the agent — each with its own cap', () => {
      const viaLedger = conversation({ trace_id: 'TL', call_parameters: { campaign: 'ignored' } })
      const viaParam = conversation({ trace_id: 'TP', call_parameters: { campaign: 'spring' }, contact_number: '+919876543211' })
      const viaAgent = conversation({ trace_id: 'TA', call_parameters: {}, contact_number: '+919876543212', agent_id: 103 })
      const r = plan([viaLedger, viaParam, viaAgent], { calls: [call({ trace_id: 'TL', recipe: 'nightly-batch' })] })
      expect(r.plans.map((p) => p.campaign)).toEqual(['nightly-batch', 'spring', 'agent:103'])
      // Same contact in two campaigns: separate histories, so both get a follow-up.
      const a = conversation({ call_parameters: { campaign: 'a' } })
      const b = conversation({ call_parameters: { campaign: 'b' } })
      expect(plan([a, b]).plans.map((p) => [p.campaign, p.attempt])).toEqual([['a', 2], ['b', 2]])
    })
    it('the same number in another spelling is the same contact', () => {
      const a = conversation({ contact_number: '09876543210', ended_at: EVENING - 1000 })
      const b = conversation({ contact_number: '+91 98765 43210' })
      const r = plan([a, b])
      expect(r.plans.map((p) => [p.previousConversationId, p.attempt])).toEqual([[b.conversation_id, 3]])
    })
  })

  describe('never twice', () => {
    it('skips a conversation that already has a live follow-up in the ledger', () => {
      const c = conversation()
      const placed = call({ previous_conversation_id: c.conversation_id, status: 'scheduled', created_at: EVENING + 30_000, trace_id: 'TX' })
      expect(plan([c], { calls: [placed] }).skips).toMatchObject([{ code: 'already_followed_up' }])
    })
    it('a follow-up that never reached the provider (failed) does not block: the re-plan reuses the same attempt number and key', () => {
      const c = conversation()
      const first = plan([c]).plans[0]!
      const failed = call({ previous_conversation_id: c.conversation_id, status: 'failed', trace_id: null, created_at: EVENING + 30_000 })
      const again = plan([c], { calls: [failed] }).plans[0]!
      expect(again.idempotencyKey).toBe(first.idempotencyKey)
    })
    // Planned again, the same request got the same 4xx — every sweep, for 7 days, against the key's rate limit.
    it('a follow-up the provider refused (rejected) is that conversation\'s last: not planned again, said why', () => {
      const c = conversation()
      const refused = call({ previous_conversation_id: c.conversation_id, status: 'rejected', trace_id: null, created_at: EVENING + 30_000 })
      const result = plan([c], { calls: [refused] })
      expect(result.plans).toEqual([])
      expect(result.skips).toMatchObject([{ code: 'refused', reason: expect.stringMatching(/^its follow-up was refused by the provider \(call call-\d+; its reason: calls list --phone \+919876543210\): not planned again$/) }])
    })
    it('a call to the contact placed after this conversation and not yet answered blocks a second one', () => {
      const c = conversation()
      const pending = call({ status: 'pending', trace_id: null, created_at: EVENING + 10_000 })
      expect(plan([c], { calls: [pending] }).skips).toMatchObject([{ code: 'call_pending' }])
    })
    // A follow-up of an earlier call, planned before this one ended and scheduled for after it, counted as history:
    // with a cap of 4 the contact called twice within the gap got two follow-ups seconds apart.
    it('a follow-up scheduled for after this conversation ended, planned before it ended, blocks a second one', () => {
      const earlier = conversation({ conversation_id: 'c0a80000-0000-4000-8000-00000000bbbb_1', trace_id: 'T0', ended_at: EVENING - 5_000, updated_at: EVENING - 5_000 })
      const c = conversation()
      const scheduled = call({ status: 'scheduled', trace_id: 'T9', previous_conversation_id: earlier.conversation_id, created_at: EVENING - 4_000, scheduled_for: EVENING + 3_600_000 })
      const result = plan([earlier, c], { calls: [scheduled], options: { maxAttempts: 4 } })
      expect(result.plans).toEqual([])
      expect(result.skips.find((s) => s.conversationId === c.conversation_id)).toMatchObject({ code: 'call_pending', reason: `another call to this contact is already scheduled for ${new Date(EVENING + 3_600_000).toISOString()}` })
      // Once its time has passed without a conversation (a lost webhook), it no longer holds a later call back.
      const later = conversation({ conversation_id: 'c0a80000-0000-4000-8000-00000000cccc_1', trace_id: 'T3', ended_at: EVENING + 2 * 3_600_000, updated_at: EVENING + 2 * 3_600_000 })
      expect(plan([earlier, later], { calls: [scheduled], options: { maxAttempts: 4 }, now: EVENING + 2 * 3_600_000 + 1_000 }).plans.map((p) => p.previousConversationId)).toEqual([later.conversation_id])
    })
    it('a follow-up placed but recorded without its trace id (its answer lost) keeps its campaign: the chain links it', () => {
      // 'spring' called the contact (A, _1); its follow-up reached the provider, but the answer was lost (a 409 on the
      // resend: no trace id). Its conversation B (_2) arrives with a trace the ledger never saw, and no campaign parameter.
      const a = conversation({ conversation_id: 'c0a80000-0000-4000-8000-00000000aaaa_1', trace_id: 'T1', ended_at: EVENING - 4 * 3_600_000, updated_at: EVENING - 4 * 3_600_000 })
      const original = call({ trace_id: 'T1', campaign: 'spring', status: 'initiated', created_at: EVENING - 5 * 3_600_000 })
      const followUp = call({ trace_id: null, campaign: 'spring', status: 'initiated', previous_conversation_id: a.conversation_id, created_at: EVENING - 3 * 3_600_000 })
      const b = conversation({ conversation_id: 'c0a80000-0000-4000-8000-00000000aaaa_2', trace_id: 'T2', call_parameters: { customer_phone: PHONE } })
      // A third 'spring' call to the contact is already queued: B's follow-up must wait for it, under 'spring'.
      const queued = call({ trace_id: null, campaign: 'spring', status: 'queued', created_at: EVENING + 60_000 })
      const r = plan([a, b], { calls: [original, followUp, queued] })
      expect(r.plans).toEqual([])
      expect(r.skips.find((s) => s.conversationId === b.conversation_id)).toMatchObject({ code: 'call_pending', campaign: 'spring' })
      // Without the queued one, B is followed up as spring's third attempt (not as a first one of agent:101).
      const next = plan([a, b], { calls: [original, followUp] }).plans
      expect(next.map((p) => [p.previousConversationId, p.campaign, p.attempt])).toEqual([[b.conversation_id, 'spring', 3]])
    })
    it('a later call still in progress supersedes the candidate', () => {
      const c = conversation()
      const live = conversation({ status: 'in_progress', terminal: 0, ended_at: null, updated_at: EVENING + 5_000 })
      expect(plan([c, live]).skips).toMatchObject([{ conversationId: c.conversation_id, code: 'in_progress' }])
    })
  })

  it('a conversation asked for by name that ended too long ago is a skip saying so, not silently nothing', () => {
    const old = conversation({ ended_at: EVENING - 40 * 86_400_000, updated_at: EVENING - 40 * 86_400_000 })
    const r = plan([old], { options: { conversationIds: [old.conversation_id] } })
    expect(r.plans).toEqual([])
    expect(r.skips).toMatchObject([{ conversationId: old.conversation_id, code: 'too_old', reason: expect.stringMatching(/more than 7 days before now: too old to follow up \(maxAgeMs\)$/) }])
    // A sweep's older rows are the contact's history, not candidates: no skip for them.
    expect(plan([old]).skips).toEqual([])
  })

  it('restricts candidates on request while still counting history', () => {
    const a = conversation({ contact_number: '+919876543211' })
    const b = conversation({ contact_number: '+919876543212' })
    const r = plan([a, b], { options: { conversationIds: [b.conversation_id] } })
    expect(r.plans.map((p) => p.previousConversationId)).toEqual([b.conversation_id])
    expect(plan([a, b], { options: { agentIds: [999] } }).plans).toEqual([])
    expect(plan([a, b], { options: { campaigns: ['agent:101'] } }).plans).toHaveLength(2)
  })
})
