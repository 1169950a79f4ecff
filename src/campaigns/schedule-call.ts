import { enqueueCalls } from '../calls/call-queue.ts'
import { toCallRecord, type CallRecord } from '../calls/record.ts'
import { ledgerDuplicate, ledgerRow } from '../calls/place-call.ts'
import { tenantOf } from '../calls/tenant.ts'
import type { QueuedWindow } from '../calls/window-at-send.ts'
import type { Runtime } from '../runtime.ts'
import { workspaceKey } from '../config/workspace-key.ts'
import type { VoiceApiError } from '../upstream/errors.ts'
import type { CallRequest, CallResponse } from '../upstream/schemas.ts'
import type { Effects } from '../effects.ts'
import { blockedAmong, type DncOptions } from './dnc.ts'
import { dncOverlayOf } from './dry-run-dnc.ts'
import { DEFAULT_FOLLOW_UP } from './plan-follow-ups.ts'
import { DEFAULT_WINDOW, givenTimeZone, isWithinWindow, nextCallingTime, timeZoneForPhone, type CallingWindow } from './calling-window.ts'
import { toCallPlan, type NewCall } from './call-input.ts'
import { isTimeZoneColumn } from './timezone-column.ts'
import { normalizePhone } from './phones.ts'

export type { NewCall }

/** What `scheduleCall` needs: a follow-up plan fits, and so does any call a recipe builds itself. */
export interface CallPlan {
  request: CallRequest
  campaign?: string | null
  /** The conversation this call continues (also sent as the request's conversation_id). */
  previousConversationId?: string | null
  /** The recipient's time zone; default: the number's country, else a `timezone` parameter, else the recipe's. */
  timeZone?: string
  window?: CallingWindow
  note?: string
}

export interface ScheduleCallOptions {
  /** Recorded on the ledger row (`calls list --recipe`). */
  recipe?: string | null
  /** Default: the workspace key (VOICE_API_KEY, or the sandbox's demo key). */
  apiKey?: string
  dnc?: DncOptions
  /** The fallback time zone of the calling window (the recipe's); default RECIPES_TIMEZONE. */
  timeZone?: string
  /**
   * The country a number written without its country code is read in (`415-555-0123` with 'US' is +1 415…);
   * default DEFAULT_COUNTRY. The do-not-call file's national-form lines are read in it too, unless
   * `dnc.defaultCountry` names another: contacts and their opt-outs are one country's numbers.
   */
  defaultCountry?: string
}

export type ScheduleCallOutcome =
  | { status: 'planned'; request: CallRequest }
  /** The number is not a callable phone number: nothing was sent. */
  | { status: 'rejected'; request: CallRequest; reason: string }
  /**
   * Never returned since calls go through the paced queue (`queued`); kept so that a recipe written when calls were
   * placed at once, and tests for it, still type-checks (a type error would stop the service running it).
   */
  | { status: 'placed'; request: CallRequest; call: CallResponse; record: CallRecord }
  /** In the paced queue (durable): the provider gets it as its limits allow; `calls list` shows the outcome. */
  | { status: 'queued'; request: CallRequest; record: CallRecord }
  /** The same idempotency key was already used within 24 h: nothing was sent. */
  | { status: 'duplicate'; request: CallRequest; record: CallRecord }
  | { status: 'blocked'; request: CallRequest; reason: string }
  /** Never returned since calls go through the paced queue (a failure shows in `calls list`); kept as `placed` is. */
  | { status: 'failed'; request: CallRequest; error: VoiceApiError; record: CallRecord | null }

/** A call that passed the campaign rules, ready for the queue. */
interface Accepted {
  request: CallRequest
  phone: string
  plan: CallPlan
  /** The recipient's zone and hours, kept with the queued call: the queue applies them again when it sends. */
  window: QueuedWindow
}

/**
 * The campaign rules for one call, before the do-not-call list: the number becomes E.164 (or the call is
 * rejected with the reason) and the time moves into the recipient's calling window.
 */
function applyRules(rt: Runtime, call: NewCall | CallPlan, options: ScheduleCallOptions): Accepted | ScheduleCallOutcome {
  const plan = toCallPlan(call)
  const now = rt.clock.now()
  const request: CallRequest = { ...plan.request, parameters: [...plan.request.parameters] }
  if (request.scheduled_for !== undefined && !Number.isFinite(Date.parse(request.scheduled_for))) {
    throw new Error(`scheduled_for "${request.scheduled_for}" is not an ISO 8601 time`)
  }
  const phoneAt = request.parameters.findIndex((p) => p.name === 'customer_phone')
  // One number: the provider may dial a second customer_phone, which neither the rules nor the do-not-call list saw.
  if (request.parameters.filter((p) => p.name === 'customer_phone').length > 1) {
    const reason = 'customer_phone: the call names it more than once; give one number'
    rt.log.warn({ agent_id: request.agent_id, recipe: options.recipe ?? null, reason }, 'call rejected')
    return { status: 'rejected', request, reason }
  }
  const raw = phoneAt >= 0 ? request.parameters[phoneAt]!.value : ''
  const phone = normalizePhone(raw, { defaultCountry: options.defaultCountry ?? rt.config.defaultCountry })
  if (!phone.ok) {
    const reason = phoneAt < 0 ? 'customer_phone: the call has no customer_phone parameter' : `customer_phone "${raw}": ${phone.reason}`
    rt.log.warn({ agent_id: request.agent_id, recipe: options.recipe ?? null, reason }, 'call rejected')
    return { status: 'rejected', request, reason }
  }
  request.parameters[phoneAt] = { name: 'customer_phone', value: phone.e164 }

  // The plan may be older than now (a slow run, a dry run replayed): keep the call inside the window.
  const zone =
    (plan.timeZone === undefined ? undefined : givenTimeZone(plan.timeZone, phone.country)) ??
    timeZoneForPhone(phone.e164, {
      country: phone.country,
      column: request.parameters.find((p) => isTimeZoneColumn(p.name))?.value,
      fallback: options.timeZone ?? rt.config.recipes.timezone,
    })
  const wanted = request.scheduled_for ? Math.max(Date.parse(request.scheduled_for), now) : now
  const window = plan.window ?? DEFAULT_WINDOW
  const at = nextCallingTime(wanted, zone, window)
  // At once only inside the window (a minute before it opens is still outside it).
  if (at - now > DEFAULT_FOLLOW_UP.immediateWithinMs || !isWithinWindow(now, zone, window)) request.scheduled_for = new Date(at).toISOString()
  else delete request.scheduled_for
  if (request.scheduled_for) {
    const at = Date.parse(request.scheduled_for)
    if (at - now > DEFAULT_FOLLOW_UP.horizonMs) {
      return { status: 'blocked', request, reason: `scheduled_for ${request.scheduled_for} is beyond the provider's 30-day horizon` }
    }
  }
  if (plan.previousConversationId && !request.conversation_id) request.conversation_id = plan.previousConversationId
  return { request, phone: phone.e164, plan, window: { timeZone: zone, start: window.start, end: window.end } }
}

/**
 * A dry run's idempotency keys, per run (its Effects): the record each key's first call would have had. The real run
 * answers a key used again `duplicate`; a dry run that planned the call again showed calls that would never be made.
 */
const dryRunKeys = new WeakMap<Effects, Map<string, CallRecord>>()

/** The queue's duplicate key: tenant, agent and idempotency key (src/calls/call-queue.ts). */
function keyOf(tenant: string, request: CallRequest): string | undefined {
  return request.idempotency_key === undefined ? undefined : `${tenant}\0${request.agent_id}\0${request.idempotency_key}`
}

/** The call a dry run already planned with this key (the real run would answer `duplicate` with its record). */
export function plannedInDryRun(effects: Effects, request: CallRequest, apiKey: string): CallRecord | undefined {
  const key = keyOf(tenantOf(apiKey), request)
  return key === undefined ? undefined : dryRunKeys.get(effects)?.get(key)
}

/**
 * Queues calls in the paced outbound queue (`enqueueCalls`: ledger row + queue row, many calls per
 * commit) under the campaign rules: the number becomes E.164 (or the call is rejected with the reason),
 * the do-not-call list is checked, and the time is moved into the recipient's calling window (09:00–21:00
 * local unless the plan says otherwise) — the same rules batches and follow-ups follow. The idempotency key
 * is kept as is — for follow-ups it is derived from campaign, contact and attempt number, so running the
 * same plan twice never calls twice. A `scheduled_for` that has slipped into the past (a slow run) becomes an
 * immediate call; one beyond the provider's 30 days is refused here rather than by the provider. In a dry
 * run the calls go into the plan instead. Each call is either the short form (`{ agentId, phone, … }`) or a
 * plan (`{ request, … }`). Outcomes are in the order given.
 */
export async function scheduleCalls(
  rt: Runtime,
  calls: Array<NewCall | CallPlan>,
  effects: Effects,
  options: ScheduleCallOptions = {},
): Promise<ScheduleCallOutcome[]> {
  const outcomes: Array<ScheduleCallOutcome | undefined> = []
  const accepted: Array<Accepted & { at: number }> = []
  for (const call of calls) {
    const ruled = applyRules(rt, call, options)
    if ('status' in ruled) outcomes.push(ruled)
    else {
      accepted.push({ ...ruled, at: outcomes.length })
      outcomes.push(undefined)
    }
  }
  const dncCountry = options.dnc?.defaultCountry ?? options.defaultCountry
  const blocked = await blockedAmong(rt, accepted.map((a) => a.phone), dncCountry === undefined ? options.dnc : { ...options.dnc, defaultCountry: dncCountry }, dncOverlayOf(effects))
  const toQueue: Array<Accepted & { at: number; effect: Effects['plan'][number] }> = []
  for (const a of accepted) {
    if (blocked.has(a.phone)) {
      outcomes[a.at] = { status: 'blocked', request: a.request, reason: 'on the do-not-call list' }
      continue
    }
    const effect = { kind: 'call' as const, request: a.request, recipe: options.recipe ?? null, campaign: a.plan.campaign ?? null, ...(a.plan.note ? { note: a.plan.note } : {}) }
    if (effects.dryRun) {
      const apiKey = options.apiKey ?? workspaceKey(rt.config)
      const earlier = plannedInDryRun(effects, a.request, apiKey)
      if (earlier) {
        outcomes[a.at] = { status: 'duplicate', request: a.request, record: earlier }
        continue
      }
      const key = keyOf(tenantOf(apiKey), a.request)
      if (key !== undefined) {
        const input = { apiKey, request: a.request, recipe: options.recipe ?? null, campaign: a.plan.campaign ?? null, previousConversationId: a.plan.previousConversationId ?? a.request.conversation_id ?? null }
        const { row } = ledgerRow(rt, input, 'queued')
        // A key the ledger holds (a real run used it within 24 h) is a duplicate in the real run: so here.
        const recorded = await ledgerDuplicate(rt.store.db, row)
        if (recorded) {
          outcomes[a.at] = { status: 'duplicate', request: a.request, record: recorded }
          continue
        }
        let keys = dryRunKeys.get(effects)
        if (!keys) dryRunKeys.set(effects, (keys = new Map()))
        keys.set(key, toCallRecord(row))
      }
      effects.plan.push(effect)
      outcomes[a.at] = { status: 'planned', request: a.request }
    } else toQueue.push({ ...a, effect })
  }
  const results = await enqueueCalls(
    rt,
    toQueue.map((a) => ({
      apiKey: options.apiKey ?? workspaceKey(rt.config),
      request: a.request,
      recipe: options.recipe ?? null,
      campaign: a.plan.campaign ?? null,
      previousConversationId: a.plan.previousConversationId ?? a.request.conversation_id ?? null,
      window: a.window,
    })),
  )
  results.forEach((result, i) => {
    const a = toQueue[i]!
    if (!result.ok) {
      outcomes[a.at] = { status: 'duplicate', request: a.request, record: result.record }
      warnIfKeyReused(rt, a.phone, a.request, result.record, options.recipe)
    }
    else {
      effects.plan.push(a.effect)
      outcomes[a.at] = { status: 'queued', request: a.request, record: result.record }
    }
  })
  return outcomes.map((o) => o!)
}

/**
 * A duplicate whose first call went to another number: the key's parts do not tell the two calls apart (a recipe's
 * `deterministicKey` without the contact in it), so this contact is not called. Still `duplicate` — the provider
 * refuses the key the same way — but said once in the log, naming both calls, rather than only in the outcome.
 */
function warnIfKeyReused(rt: Runtime, phone: string, request: CallRequest, earlier: CallRecord, recipe: string | null | undefined): void {
  if (earlier.customer_phone === phone) return
  rt.log.warn(
    { recipe: recipe ?? null, idempotency_key: request.idempotency_key ?? null, earlier_call: earlier.id },
    `a call to another number already used this idempotency key (call ${earlier.id}): this one is not placed — the key's parts should name the contact (e.g. ctx.campaigns.deterministicKey(campaign, phone, attempt))`,
  )
}

/** Queues one call under the campaign rules (see `scheduleCalls`). */
export async function scheduleCall(rt: Runtime, call: NewCall | CallPlan, effects: Effects, options: ScheduleCallOptions = {}): Promise<ScheduleCallOutcome> {
  const [outcome] = await scheduleCalls(rt, [call], effects, options)
  return outcome!
}
