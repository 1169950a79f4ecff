import type { Runtime } from '../../src/runtime.ts'

/**
 * A known day for the report tests: 2026-11-20 in Asia/Kolkata (UTC+05:30), i.e.
 * [2026-11-19T18:30:00Z, 2026-11-20T18:30:00Z). Conversations sit on both sides of both boundaries, and at
 * UTC instants whose UTC date differs from the local one, so a report that used UTC days would be wrong.
 */
export const DAY = '2026-11-20'
export const TZ = 'Asia/Kolkata'
export const DAY_START = Date.parse('2026-11-19T18:30:00Z')
export const DAY_END = Date.parse('2026-11-20T18:30:00Z')

export const FORMULA = '=HYPERLINK("http://evil.example/x","click me")'

export interface SeedConversation {
  conversation_id: string
  agent_id: number
  contact_number: string
  status: string
  duration_seconds: number | null
  ended_at: number | null
  created_at?: number
  failure_reason?: string | null
  trace_id: string
  results?: Record<string, unknown> | null
  call_parameters?: Record<string, string> | null
}

const h = (iso: string) => Date.parse(iso)

/** The 21 conversations of the day (in-day), with their expected campaign. */
export const IN_DAY: Array<SeedConversation & { campaign: string }> = [
  // At the very first instant of the local day (00:00:00.000 IST).
  { conversation_id: 'conv_start_edge', agent_id: 101, contact_number: '+919800000001', status: 'completed', duration_seconds: 60, ended_at: DAY_START, trace_id: 'tr_01', results: { intent: 'interested' }, campaign: 'diwali-offer' },
  // 00:30 IST = 19:00Z on the 19th: the previous day in UTC, this day locally.
  { conversation_id: 'conv_utc_prev', agent_id: 101, contact_number: '+919800000002', status: 'completed', duration_seconds: 120, ended_at: h('2026-11-19T19:00:00Z'), trace_id: 'tr_02', results: { intent: 'interested', notes: FORMULA }, campaign: 'diwali-offer' },
  { conversation_id: 'conv_03', agent_id: 101, contact_number: '+919800000003', status: 'completed', duration_seconds: 90, ended_at: h('2026-11-20T04:00:00Z'), trace_id: 'tr_03', results: { intent: 'not_interested' }, campaign: 'diwali-offer' },
  { conversation_id: 'conv_04', agent_id: 101, contact_number: '+919800000004', status: 'completed', duration_seconds: 30, ended_at: h('2026-11-20T05:00:00Z'), trace_id: 'tr_04', results: { intent: 'callback', callback_at: '2026-11-21 10:00' }, campaign: 'no-answer-followup' },
  { conversation_id: 'conv_05', agent_id: 101, contact_number: '+919800000005', status: 'completed', duration_seconds: 45, ended_at: h('2026-11-20T06:00:00Z'), trace_id: 'tr_05', results: { intent: 'interested' }, call_parameters: { campaign: 'winback', customer_name: 'Zoë' }, campaign: 'winback' },
  { conversation_id: 'conv_06', agent_id: 201, contact_number: '+14155550106', status: 'completed', duration_seconds: 75, ended_at: h('2026-11-20T07:00:00Z'), trace_id: 'tr_06', results: { intent: 'interested' }, campaign: '(direct)' },
  { conversation_id: 'conv_07', agent_id: 201, contact_number: '+14155550107', status: 'completed', duration_seconds: 15, ended_at: h('2026-11-20T08:00:00Z'), trace_id: 'tr_07', results: { intent: 'not_interested' }, campaign: '(direct)' },
  // The last millisecond of the local day.
  { conversation_id: 'conv_end_edge', agent_id: 201, contact_number: '+14155550108', status: 'completed', duration_seconds: 105, ended_at: DAY_END - 1, trace_id: 'tr_08', results: { intent: '-1 not sure' }, campaign: '(direct)' },
  { conversation_id: 'conv_09', agent_id: 101, contact_number: '+919800000009', status: 'no_answer', duration_seconds: 0, ended_at: h('2026-11-20T09:00:00Z'), trace_id: 'tr_09', failure_reason: 'no_answer_timeout', campaign: 'diwali-offer' },
  { conversation_id: 'conv_10', agent_id: 101, contact_number: '+919800000010', status: 'no_answer', duration_seconds: 0, ended_at: h('2026-11-20T09:10:00Z'), trace_id: 'tr_10', failure_reason: 'no_answer_timeout', campaign: 'diwali-offer' },
  { conversation_id: 'conv_11', agent_id: 101, contact_number: '+919800000011', status: 'no_answer', duration_seconds: 0, ended_at: h('2026-11-20T09:20:00Z'), trace_id: 'tr_11', failure_reason: 'no_answer_timeout', campaign: '(direct)' },
  { conversation_id: 'conv_12', agent_id: 201, contact_number: '+14155550112', status: 'no_answer', duration_seconds: 0, ended_at: h('2026-11-20T09:30:00Z'), trace_id: 'tr_12', failure_reason: 'no_answer_timeout', campaign: '(direct)' },
  { conversation_id: 'conv_13', agent_id: 101, contact_number: '+919800000013', status: 'busy', duration_seconds: 0, ended_at: h('2026-11-20T10:00:00Z'), trace_id: 'tr_13', failure_reason: 'line_busy', campaign: '(direct)' },
  { conversation_id: 'conv_14', agent_id: 101, contact_number: '+919800000014', status: 'busy', duration_seconds: 0, ended_at: h('2026-11-20T10:10:00Z'), trace_id: 'tr_14', failure_reason: 'line_busy', campaign: '(direct)' },
  { conversation_id: 'conv_15', agent_id: 201, contact_number: '+14155550115', status: 'busy', duration_seconds: 0, ended_at: h('2026-11-20T10:20:00Z'), trace_id: 'tr_15', failure_reason: 'line_busy', campaign: '(direct)' },
  { conversation_id: 'conv_16', agent_id: 101, contact_number: '+919800000016', status: 'failed', duration_seconds: 0, ended_at: h('2026-11-20T11:00:00Z'), trace_id: 'tr_16', failure_reason: 'carrier_error', campaign: '(direct)' },
  { conversation_id: 'conv_17', agent_id: 101, contact_number: '+919800000017', status: 'failed', duration_seconds: 0, ended_at: h('2026-11-20T11:10:00Z'), trace_id: 'tr_17', failure_reason: 'carrier_error', campaign: '(direct)' },
  { conversation_id: 'conv_18', agent_id: 101, contact_number: '+919800000018', status: 'socket_failure', duration_seconds: 10, ended_at: h('2026-11-20T12:00:00Z'), trace_id: 'tr_18', failure_reason: 'media_timeout', campaign: '(direct)' },
  { conversation_id: 'conv_19', agent_id: 101, contact_number: '+919800000019', status: 'unreachable', duration_seconds: 0, ended_at: h('2026-11-20T12:10:00Z'), trace_id: 'tr_19', failure_reason: 'invalid_number', campaign: '(direct)' },
  { conversation_id: 'conv_20', agent_id: 101, contact_number: '+919800000099', status: 'telephony_failed', duration_seconds: 0, ended_at: h('2026-11-20T12:20:00Z'), trace_id: 'tr_20', failure_reason: 'sip_503', campaign: '(direct)' },
  // Still in progress: no end yet, first recorded this day.
  { conversation_id: 'conv_21_live', agent_id: 201, contact_number: '+14155550121', status: 'in_progress', duration_seconds: null, ended_at: null, created_at: h('2026-11-20T18:00:00Z'), trace_id: 'tr_21', campaign: '(direct)' },
]

/** Just outside the day: the previous local day gets two, the next one. */
export const OUT_OF_DAY: SeedConversation[] = [
  { conversation_id: 'conv_prev_edge', agent_id: 101, contact_number: '+919800000031', status: 'completed', duration_seconds: 50, ended_at: DAY_START - 1, trace_id: 'tr_31', results: { intent: 'interested' } },
  { conversation_id: 'conv_prev_2', agent_id: 101, contact_number: '+919800000032', status: 'no_answer', duration_seconds: 0, ended_at: h('2026-11-19T10:00:00Z'), trace_id: 'tr_32' },
  { conversation_id: 'conv_next_edge', agent_id: 101, contact_number: '+919800000033', status: 'completed', duration_seconds: 50, ended_at: DAY_END, trace_id: 'tr_33' },
  // 20:00Z on the 20th: still the 20th in UTC, already the 21st in Kolkata.
  { conversation_id: 'conv_utc_same_next_local', agent_id: 201, contact_number: '+14155550134', status: 'busy', duration_seconds: 0, ended_at: h('2026-11-20T20:00:00Z'), trace_id: 'tr_34' },
]

export function createdAtOf(c: SeedConversation): number {
  return c.created_at ?? (c.ended_at ?? DAY_START) - 120_000
}

export function startedAtOf(c: SeedConversation): number {
  return c.ended_at === null ? createdAtOf(c) : c.ended_at - (c.duration_seconds ?? 0) * 1000 - 5000
}

export async function insertConversations(rt: Runtime, list: SeedConversation[]): Promise<void> {
  if (list.length === 0) return
  await rt.store.db
    .insertInto('conversations')
    .values(
      list.map((c) => {
        const created = createdAtOf(c)
        return {
          conversation_id: c.conversation_id,
          agent_id: c.agent_id,
          contact_number: c.contact_number,
          status: c.status,
          terminal: c.ended_at === null ? 0 : 1,
          duration_seconds: c.duration_seconds,
          started_at: startedAtOf(c),
          ended_at: c.ended_at,
          failure_reason: c.failure_reason ?? null,
          trace_id: c.trace_id,
          from_phone: '+918035550101',
          recording_url: null,
          transcript: null,
          results: c.results ? JSON.stringify(c.results) : null,
          call_parameters: c.call_parameters ? JSON.stringify(c.call_parameters) : null,
          retry: null,
          retry_context: null,
          last_event_at: c.ended_at ?? created,
          last_event_id: null,
          source: 'webhook',
          created_at: created,
          updated_at: c.ended_at ?? created,
        }
      }),
    )
    .execute()
}

export function callRow(input: { id: string; trace_id: string | null; recipe: string | null; campaign: string | null; previous?: string | null; status?: string; created_at: number }) {
  return {
    id: input.id,
    tenant: 't_acme',
    agent_id: 101,
    customer_phone: '+919800000000',
    idempotency_key: `idem_${input.id}`,
    trace_id: input.trace_id,
    conversation_id: null,
    previous_conversation_id: input.previous ?? null,
    scheduled_for: null,
    parameters: '[]',
    retry_context: null,
    metadata: null,
    recipe: input.recipe,
    campaign: input.campaign,
    status: input.status ?? 'initiated',
    error: null,
    created_at: input.created_at,
    updated_at: input.created_at,
  }
}

/** Seeds the whole known day: conversations, the calls ledger, and the webhook inbox. */
export async function seedKnownDay(rt: Runtime): Promise<void> {
  await insertConversations(rt, IN_DAY)
  await insertConversations(rt, OUT_OF_DAY)
  const before = DAY_START - 3_600_000
  await rt.store.db
    .insertInto('calls')
    .values([
      callRow({ id: 'call_01', trace_id: 'tr_01', recipe: 'nightly-batch', campaign: 'diwali-offer', created_at: before }),
      callRow({ id: 'call_02', trace_id: 'tr_02', recipe: 'nightly-batch', campaign: 'diwali-offer', created_at: before }),
      callRow({ id: 'call_03', trace_id: 'tr_03', recipe: null, campaign: 'diwali-offer', created_at: before }),
      callRow({ id: 'call_09', trace_id: 'tr_09', recipe: null, campaign: 'diwali-offer', created_at: before }),
      callRow({ id: 'call_10', trace_id: 'tr_10', recipe: null, campaign: 'diwali-offer', created_at: before }),
      // Follow-ups scheduled during the day: one already completed (conv_04), one still scheduled.
      callRow({ id: 'call_fu1', trace_id: 'tr_04', recipe: 'no-answer-followup', campaign: null, previous: 'conv_prev_2', created_at: DAY_START + 3_600_000 }),
      callRow({ id: 'call_fu2', trace_id: 'tr_fu2', recipe: 'no-answer-followup', campaign: null, previous: 'conv_09', status: 'scheduled', created_at: DAY_START + 7_200_000 }),
      // A follow-up scheduled the next day: not this day's.
      callRow({ id: 'call_fu3', trace_id: 'tr_fu3', recipe: 'no-answer-followup', campaign: null, previous: 'conv_10', status: 'scheduled', created_at: DAY_END }),
    ])
    .execute()
  const event = (id: string, at: number, status: string, source: string) => ({
    event_id: id, target: 'formant', event_type: 'call.completed', conversation_id: null, trace_id: null, agent_id: 101,
    body: '{}', headers: '{}', source, received_at: at, status, attempts: 1, next_attempt_at: at, claimed_by: null,
    claimed_until: null, last_error: null, processed_at: at,
  })
  await rt.store.db
    .insertInto('webhook_events')
    .values([
      event('evt_1', DAY_START, 'processed', 'webhook'),
      event('evt_2', DAY_START + 1000, 'processed', 'webhook'),
      event('evt_3', DAY_END - 1, 'processed', 'webhook'),
      event('evt_4', DAY_START + 5000, 'dead', 'webhook'),
      event('evt_5', DAY_START + 6000, 'processed', 'reconcile'),
      event('evt_out', DAY_END, 'processed', 'webhook'),
    ])
    .execute()
  // The receiver's own counters: two extra copies of evt_1, and refused deliveries per minute.
  await rt.store.db.updateTable('webhook_events').set({ duplicates: 2 }).where('event_id', '=', 'evt_1').execute()
  await rt.store.db
    .insertInto('webhook_rejections')
    .values([
      { bucket_at: DAY_START, target: 'formant', reason: 'invalid_signature', count: 3 },
      { bucket_at: DAY_END - 60_000, target: 'formant', reason: 'stale_timestamp', count: 1 },
      { bucket_at: DAY_END, target: 'formant', reason: 'invalid_signature', count: 5 },
    ])
    .execute()
}

/** What the figures of the known day must be. */
export const EXPECTED = {
  calls: 21,
  byStatus: { completed: 8, no_answer: 4, busy: 3, failed: 2, socket_failure: 1, unreachable: 1, telephony_failed: 1, in_progress: 1 },
  // 8 / 21 = 38.095…%, (8 + 1) / 21 = 42.857…%
  successRate: 38.1,
  connectRate: 42.9,
  // connected durations: 60 120 90 30 45 75 15 105 (completed) + 10 (socket_failure) = 550 / 9 = 61.11…
  avgDurationSeconds: 61.1,
}
