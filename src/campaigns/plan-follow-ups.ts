import type { CallsTable, ConversationsTable } from '../db/schema.ts'
import { fromJsonOrNull } from '../db/json.ts'
import { ledgerParameters } from './ledger-parameters.ts'
import type { CallParameter, CallRequest, RetryContext, WebhookRetry } from '../upstream/schemas.ts'
import { DEFAULT_WINDOW, isWithinWindow, nextCallingTime, resolveTimeZone, type CallingWindow } from './calling-window.ts'
import { asksNotToCall } from './dnc.ts'
import { followUpKey } from './idempotency-key.ts'
import { timeZoneColumnOf } from './timezone-column.ts'
import { contactKey } from './contact-key.ts'
import { normalizePhone, type PhoneResult } from './phones.ts'
import { buildRetryContext, type RetryContextOptions } from './retry-context.ts'
import { previousInChain } from './conversation-chain.ts'

/**
 * The follow-up planner: pure over its inputs (terminal conversations, the calls switchboard placed, the
 * do-not-call list and the time), so the same inputs always give the same plans — which is what makes a
 * re-run safe and the rules testable on an injected clock. It decides; `scheduleCall` acts.
 */

/** A conversations read-model row (JSON columns as stored text). */
export type ConversationInput = Pick<
  ConversationsTable,
  | 'conversation_id' | 'agent_id' | 'contact_number' | 'status' | 'terminal' | 'started_at' | 'ended_at' | 'updated_at'
  | 'trace_id' | 'results' | 'call_parameters' | 'retry' | 'retry_context'
>

/** A `calls` ledger row. */
export type CallInput = Pick<
  CallsTable,
  | 'id' | 'agent_id' | 'customer_phone' | 'trace_id' | 'conversation_id' | 'previous_conversation_id' | 'recipe' | 'campaign'
  | 'status' | 'created_at' | 'scheduled_for' | 'parameters'
>

export type FollowUpStatus = 'no_answer' | 'busy' | 'technical'

/** Outcomes that are technical failures: followed up sooner, and only when a recipe asks for it. */
export const TECHNICAL_FAILURES = ['failed', 'socket_failure', 'telephony_failed'] as const

export interface FollowUpOptions {
  /** Calls per contact per campaign in all, the original included, across no_answer and busy. Default 3. */
  maxAttempts?: number
  /** Minimum time from the end of a call to its follow-up. Defaults: no_answer 1 h, busy 2 h, technical 10 min. */
  minGapMs?: Partial<Record<FollowUpStatus, number>>
  /** Follow up technical failures (failed, socket_failure, telephony_failed) too, sooner. Default false. */
  technicalFailures?: boolean
  window?: CallingWindow
  /** The recipe's time zone, used when neither the number's country nor a `timezone` parameter decides. */
  timeZone?: string
  /** How far ahead a call may be scheduled: the provider's 30 days, less 5 minutes of margin for the request. */
  horizonMs?: number
  /** Only conversations that ended this recently are followed up (older ones count as history). Default 7 days. */
  maxAgeMs?: number
  /** A follow-up due within this long is placed immediately (no scheduled_for). Default 60 s. */
  immediateWithinMs?: number
  defaultCountry?: string
  /** Place follow-ups with this agent instead of the conversation's. */
  agentId?: number
  retryContext?: RetryContextOptions
  /** Restrict candidates (history still counts): these conversations, agents or campaigns only. */
  conversationIds?: string[]
  agentIds?: number[]
  campaigns?: string[]
}

export interface FollowUpInput {
  /** Conversations to consider: candidates and history (terminal or not). */
  conversations: Iterable<ConversationInput>
  /** The calls history (all statuses). */
  calls: Iterable<CallInput>
  /** E.164 numbers never to call. */
  dnc: { has(e164: string): boolean }
  now: number
  options?: FollowUpOptions
}

export interface FollowUpPlan {
  previousConversationId: string
  previousStatus: string
  campaign: string
  agentId: number
  phone: string
  /** 2 for the first follow-up; the original call was attempt 1. */
  attempt: number
  maxAttempts: number
  /** When the call should start (epoch ms); equal to `now` for an immediate call. */
  scheduledFor: number
  timeZone: string
  /**
   * The number's country, when it has several time zones and the call named none (`timezone` parameter): `timeZone` is
   * then the recipe's, a guess `runFollowUps` warns about.
   */
  timeZoneGuessed?: string | undefined
  window: CallingWindow
  idempotencyKey: string
  retryContext: RetryContext
  request: CallRequest
  note: string
}

export type SkipCode =
  | 'not_latest' | 'in_progress' | 'completed' | 'unreachable' | 'status' | 'platform_retry' | 'invalid_phone' | 'dnc'
  | 'opted_out' | 'already_followed_up' | 'refused' | 'call_pending' | 'attempt_cap' | 'horizon' | 'too_old'

export interface FollowUpSkip {
  conversationId: string
  phone: string | null
  campaign: string
  code: SkipCode
  reason: string
}

export interface FollowUpResult {
  plans: FollowUpPlan[]
  skips: FollowUpSkip[]
  /** Numbers whose latest results ask not to be called again (the caller adds them to the DNC list). */
  optOuts: Array<{ phone: string; conversationId: string }>
}

const HOUR = 3_600_000
const DAY = 24 * HOUR
/**
 * The follow-up defaults (attempt cap, gaps, horizon, max age) every option overrides. Frozen, as DEFAULT_WINDOW is:
 * recipes get it as `ctx.campaigns.DEFAULT_FOLLOW_UP`, and a change there held for every recipe in the process.
 */
export const DEFAULT_FOLLOW_UP = Object.freeze({
  maxAttempts: 3,
  minGapMs: Object.freeze({ no_answer: HOUR, busy: 2 * HOUR, technical: 10 * 60_000 } satisfies Record<FollowUpStatus, number>),
  horizonMs: 30 * DAY - 5 * 60_000,
  maxAgeMs: 7 * DAY,
  immediateWithinMs: 60_000,
})

/** Calls the provider refused or that never reached it do not count as attempts and do not block. */
export const DEAD_CALL_STATUSES = ['failed', 'rejected'] as const
const DEAD_CALL = new Set<string>(DEAD_CALL_STATUSES)
/**
 * A follow-up the provider refused (a 4xx: an agent with no number, a bad parameter) is that conversation's last word:
 * planned again, the same request under the same key got the same refusal — every sweep, for the 7 days the
 * conversation stays a candidate, each one a request against the key's rate limit. A `failed` one (the provider
 * unreachable or 5xx until the queue gave up) is planned again: the next try may reach it.
 */
export const FINAL_FOLLOW_UP_STATUSES = ['rejected'] as const
const FINAL_FOLLOW_UP = new Set<string>(FINAL_FOLLOW_UP_STATUSES)
/** Dead calls that leave their conversation to be followed up again (DEAD_CALL_STATUSES but FINAL_FOLLOW_UP_STATUSES). */
export const RETRIED_DEAD_CALL_STATUSES = DEAD_CALL_STATUSES.filter((s) => !FINAL_FOLLOW_UP.has(s))

const parse = fromJsonOrNull

function chainSuffix(conversationId: string): number {
  const match = /_(\d+)$/.exec(conversationId)
  return match ? Number(match[1]) : 1
}

function endOf(c: ConversationInput): number {
  return c.ended_at ?? c.updated_at ?? c.started_at ?? 0
}

function stringRecord(value: unknown): Record<string, string> | null {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return null
  const record = value as Record<string, unknown>
  let plain = true
  for (const k in record) if (typeof record[k] !== 'string') plain = false
  // The usual case (the provider sends strings): no copy.
  if (plain) return record as Record<string, string>
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(record)) if (v !== null && v !== undefined) out[k] = typeof v === 'string' ? v : JSON.stringify(v)
  return out
}

interface Group {
  conversations: ConversationInput[]
  calls: CallInput[]
  /** The conversations with what the planner worked out for each (campaign, phone, parameters, ledger row). */
  members: Conv[]
}

interface Conv {
  row: ConversationInput
  campaign: string
  phone: string
  params: Record<string, string> | null
  ledger: CallInput | undefined
}

/** The country national-form numbers are read in while planning. */
const planningCountry = (o: FollowUpOptions): string => o.defaultCountry ?? 'IN'

/**
 * The number a conversation is about, as stored: its contact's, else the `customer_phone` its call was placed with.
 * `params` gives the call's parameters when the caller has them parsed already.
 */
function rawPhoneOf(row: ConversationInput, params: () => Record<string, string> | null = () => stringRecord(parse(row.call_parameters))): string | null {
  return row.contact_number ?? params()?.customer_phone ?? null
}

/**
 * Every number planFollowUps may look up in its `dnc` for these conversations, as E.164 (rawPhoneOf, the planner's own
 * rule). A caller asks the do-not-call list about these alone instead of reading the whole list for every batch.
 */
export function numbersToScreen(conversations: Iterable<ConversationInput>, options: FollowUpOptions = {}): string[] {
  const defaultCountry = planningCountry(options)
  const numbers = new Set<string>()
  for (const row of conversations) {
    const r = normalizePhone(rawPhoneOf(row), { defaultCountry })
    if (r.ok) numbers.add(r.e164)
  }
  return [...numbers]
}

/** Plans follow-ups from conversations, the calls ledger and the DNC list at `now`: pure, so the same inputs give the same plans. */
export function planFollowUps(input: FollowUpInput): FollowUpResult {
  const o = input.options ?? {}
  const now = input.now
  const maxAttempts = o.maxAttempts ?? DEFAULT_FOLLOW_UP.maxAttempts
  const gaps = { ...DEFAULT_FOLLOW_UP.minGapMs, ...o.minGapMs }
  const horizon = o.horizonMs ?? DEFAULT_FOLLOW_UP.horizonMs
  const maxAge = o.maxAgeMs ?? DEFAULT_FOLLOW_UP.maxAgeMs
  const immediateWithin = o.immediateWithinMs ?? DEFAULT_FOLLOW_UP.immediateWithinMs
  const window = o.window ?? DEFAULT_WINDOW
  const fallbackZone = o.timeZone ?? 'UTC'
  // The process's shared cache (normalizePhone), not one of the run's own: the numbers were just read by
  // loadFollowUpInputs and are read again when each call is scheduled, so each is parsed once, not twice.
  const defaultCountry = planningCountry(o)
  const normalize = (raw: string | null | undefined): PhoneResult => normalizePhone(raw, { defaultCountry })
  const onlyConversations = o.conversationIds ? new Set(o.conversationIds) : undefined
  const onlyAgents = o.agentIds ? new Set(o.agentIds) : undefined
  const onlyCampaigns = o.campaigns ? new Set(o.campaigns) : undefined

  // Grouping only needs one spelling per number: the contact key, as the database keeps it. Numbers from the provider
  // are E.164 already and taken as they are; full validation runs for the numbers actually about to be called.
  const phoneKey = (raw: string | null | undefined) => contactKey(raw, defaultCountry) ?? ''

  // Campaign identity: the ledger row of the call (by trace id) → its campaign or recipe; else a
  // `campaign` call parameter; else the agent.
  const callsByTrace = new Map<string, CallInput>()
  const calls = [...input.calls]
  for (const call of calls) if (call.trace_id) callsByTrace.set(call.trace_id, call)
  // A call the provider took but whose answer was lost (recorded with no trace id: a 409 on a resend, a timeout)
  // is found by the conversation it continued instead: its conversation is the next one of that chain.
  const untracedByPrevious = new Map<string, CallInput>()
  for (const call of calls) if (!call.trace_id && call.previous_conversation_id) untracedByPrevious.set(call.previous_conversation_id, call)
  /** Untraced ledger rows matched to their conversation that way: one call, counted once (as its conversation). */
  const linked = new Set<CallInput>()
  const ledgerOf = (row: ConversationInput): CallInput | undefined => {
    const byTrace = row.trace_id ? callsByTrace.get(row.trace_id) : undefined
    if (byTrace || untracedByPrevious.size === 0) return byTrace
    const previous = previousInChain(row.conversation_id)
    const untraced = previous === undefined ? undefined : untracedByPrevious.get(previous)
    if (untraced) linked.add(untraced)
    return untraced
  }
  const callCampaign = (call: CallInput): string =>
    call.campaign ?? call.recipe ?? ledgerParameters(call.parameters).campaign ?? `agent:${call.agent_id}`

  // One map of numbers per campaign (there are few campaigns): a combined `campaign + number` key was a new
  // string to build and hash for every row, the largest single cost of planning 100,000 conversations.
  const campaigns = new Map<string, Map<string, Group>>()
  const group = (campaign: string, phone: string): Group => {
    let byPhone = campaigns.get(campaign)
    if (!byPhone) campaigns.set(campaign, (byPhone = new Map()))
    let g = byPhone.get(phone)
    if (!g) byPhone.set(phone, (g = { conversations: [], calls: [], members: [] }))
    return g
  }
  for (const call of calls) group(callCampaign(call), phoneKey(call.customer_phone)).calls.push(call)

  /** Groups in the order their first conversation came (the order plans and skips are listed in). */
  const withConversations: Group[] = []
  for (const row of input.conversations) {
    const ledger = ledgerOf(row)
    let params: Record<string, string> | null = null
    let campaign = ledger ? (ledger.campaign ?? ledger.recipe) : null
    if (!campaign) {
      params = stringRecord(parse(row.call_parameters))
      campaign = params?.campaign ?? (ledger ? callCampaign(ledger) : `agent:${row.agent_id}`)
    }
    const phone = rawPhoneOf(row, () => (params ??= stringRecord(parse(row.call_parameters))))
    const conv: Conv = { row, campaign, phone: phoneKey(phone), params, ledger }
    const g = group(campaign, conv.phone)
    g.conversations.push(row)
    if (g.members.length === 0) withConversations.push(g)
    g.members.push(conv)
  }

  const plans: FollowUpPlan[] = []
  const skips: FollowUpSkip[] = []
  const optOuts: FollowUpResult['optOuts'] = []

  for (const g of withConversations) {
    const members = g.members
    // The latest call to the contact decides; anything earlier is history.
    let latest = members[0]!
    for (const m of members) {
      const a = endOf(m.row)
      const b = endOf(latest.row)
      if (a > b || (a === b && chainSuffix(m.row.conversation_id) > chainSuffix(latest.row.conversation_id))) latest = m
    }
    for (const m of members) {
      const row = m.row
      if (row.terminal !== 1) continue
      if (onlyConversations && !onlyConversations.has(row.conversation_id)) continue
      if (endOf(row) < now - maxAge) {
        // Asked for by name (an event batch, `recipes test --events`): say why nothing came of it. A sweep's older
        // rows are only the contact's history.
        if (onlyConversations) {
          skips.push({ conversationId: row.conversation_id, phone: m.phone || null, campaign: m.campaign, code: 'too_old', reason: `ended ${new Date(endOf(row)).toISOString()}, more than ${Math.round(maxAge / DAY)} days before now: too old to follow up (maxAgeMs)` })
        }
        continue
      }
      if (onlyAgents && !onlyAgents.has(row.agent_id)) continue
      if (onlyCampaigns && !onlyCampaigns.has(m.campaign)) continue
      const results = parse<Record<string, unknown>>(row.results)
      if (asksNotToCall(results)) {
        const valid = normalize(m.phone)
        if (valid.ok) optOuts.push({ phone: valid.e164, conversationId: row.conversation_id })
      }
      const decision = decide(m, latest, g, results)
      if ('code' in decision) skips.push({ conversationId: row.conversation_id, phone: m.phone || null, campaign: m.campaign, ...decision })
      else plans.push(decision)
    }
  }
  return { plans, skips, optOuts }

  function decide(m: Conv, latest: Conv, g: Group, results: Record<string, unknown> | null): FollowUpPlan | { code: SkipCode; reason: string } {
    const row = m.row
    if (m !== latest) {
      return latest.row.terminal === 1
        ? { code: 'not_latest', reason: `a later call (${latest.row.conversation_id}, ${latest.row.status}) supersedes this one` }
        : { code: 'in_progress', reason: `a later call (${latest.row.conversation_id}) is in progress` }
    }
    const status = row.status
    let kind: FollowUpStatus
    if (status === 'no_answer' || status === 'busy') kind = status
    else if ((TECHNICAL_FAILURES as readonly string[]).includes(status)) {
      if (!o.technicalFailures) return { code: 'status', reason: `${status} is a technical failure; technical follow-ups are off (technicalFailures)` }
      kind = 'technical'
    } else if (status === 'completed') return { code: 'completed', reason: 'the contact was reached' }
    else if (status === 'unreachable') return { code: 'unreachable', reason: 'unreachable numbers are never followed up' }
    else return { code: 'status', reason: `status "${status}" is not followed up` }

    const retry = parse<Partial<WebhookRetry>>(row.retry)
    if (retry && retry.is_final_attempt === false) {
      const n = retry.attempt_number !== undefined ? ` after attempt ${retry.attempt_number} of ${retry.max_attempts ?? '?'}` : ''
      return { code: 'platform_retry', reason: `the platform will retry${n}${retry.next_retry_at ? ` at ${retry.next_retry_at}` : ''}` }
    }

    const phone = normalize(m.phone)
    if (!phone.ok) return { code: 'invalid_phone', reason: `no valid phone number: ${phone.reason}` }
    if (input.dnc.has(phone.e164)) return { code: 'dnc', reason: 'on the do-not-call list' }
    if (asksNotToCall(results)) return { code: 'opted_out', reason: 'the call results ask not to be called again' }

    const end = endOf(row)
    const traces = new Set<string>()
    for (const c of g.conversations) traces.add(c.trace_id ?? `conversation:${c.conversation_id}`)
    for (const call of g.calls) {
      if (FINAL_FOLLOW_UP.has(call.status) && call.previous_conversation_id === row.conversation_id) {
        return { code: 'refused', reason: `its follow-up was refused by the provider (call ${call.trace_id ?? call.id}; its reason: calls list --phone ${phone.e164}): not planned again` }
      }
      if (DEAD_CALL.has(call.status)) continue
      if (call.previous_conversation_id === row.conversation_id) {
        return { code: 'already_followed_up', reason: `already followed up (call ${call.trace_id ?? call.id}, ${call.status})` }
      }
      const known = (call.trace_id !== null && traces.has(call.trace_id)) || linked.has(call)
      // Placed after this call ended, or scheduled to start after it (a follow-up of an earlier call, planned before this
      // one ended): still to come. Only the first was looked at, and a contact called twice within the gap got two
      // follow-ups seconds apart once the attempt cap left room for both.
      const toCome = call.created_at > end || (call.scheduled_for !== null && call.scheduled_for > end)
      if (!known && toCome) {
        const when = call.scheduled_for !== null && call.scheduled_for > end ? ` for ${new Date(call.scheduled_for).toISOString()}` : ''
        return { code: 'call_pending', reason: `another call to this contact is already ${call.status}${when}` }
      }
    }

    // Attempts used: distinct calls (conversations and live ledger rows, one per trace id), or what the
    // platform or the conversation chain says when that is more.
    let used = 0
    let platformMax = 0
    let chainMax = 0
    for (const c of g.conversations) {
      chainMax = Math.max(chainMax, chainSuffix(c.conversation_id))
      const r = c === row ? retry : parse<Partial<WebhookRetry>>(c.retry)
      if (typeof r?.attempt_number === 'number') platformMax = Math.max(platformMax, r.attempt_number)
    }
    for (const call of g.calls) if (!DEAD_CALL.has(call.status) && !linked.has(call)) traces.add(call.trace_id ?? `call:${call.id}`)
    used = Math.max(traces.size, platformMax, chainMax)
    if (used >= maxAttempts) return { code: 'attempt_cap', reason: `attempt cap reached (${used} of ${maxAttempts} in campaign ${m.campaign})` }

    const params = m.params ?? stringRecord(parse(row.call_parameters)) ?? (m.ledger ? ledgerParameters(m.ledger.parameters) : {})
    const resolved = resolveTimeZone(phone.e164, { country: phone.country, column: timeZoneColumnOf(params), fallback: fallbackZone })
    const timeZone = resolved.zone
    const earliest = Math.max(end + gaps[kind], now)
    const at = nextCallingTime(earliest, timeZone, window)
    if (at - now > horizon) {
      return { code: 'horizon', reason: `the next allowed time (${new Date(at).toISOString()}) is beyond the provider's 30-day scheduling horizon` }
    }

    const attempt = used + 1
    const retryContext = buildRetryContext(
      { status, results, parameters: params, previous: parse<RetryContext>(row.retry_context) },
      o.retryContext,
    )
    const parameters: CallParameter[] = [{ name: 'customer_phone', value: phone.e164 }]
    for (const [name, value] of Object.entries(params)) if (name !== 'customer_phone') parameters.push({ name, value })
    const idempotencyKey = followUpKey(m.campaign, phone.e164, attempt)
    // Placed at once only inside the window: a minute before it opens, "due within a minute" rang 08:59:30 local.
    const immediate = at - now <= immediateWithin && isWithinWindow(now, timeZone, window)
    const request: CallRequest = {
      agent_id: o.agentId ?? row.agent_id,
      parameters,
      conversation_id: row.conversation_id,
      idempotency_key: idempotencyKey,
      retry_context: retryContext,
      ...(immediate ? {} : { scheduled_for: new Date(at).toISOString() }),
    }
    return {
      previousConversationId: row.conversation_id,
      previousStatus: status,
      campaign: m.campaign,
      agentId: request.agent_id,
      phone: phone.e164,
      attempt,
      maxAttempts,
      scheduledFor: immediate ? now : at,
      timeZone,
      timeZoneGuessed: resolved.from === 'fallback' ? resolved.country ?? '?' : undefined,
      window,
      idempotencyKey,
      retryContext,
      request,
      note: `follow-up ${attempt}/${maxAttempts} after ${status} (${row.conversation_id})`,
    }
  }
}
