import { placeCall } from '../calls/place-call.ts'
import type { CallRecord } from '../calls/record.ts'
import type { Runtime } from '../runtime.ts'
import { SANDBOX_WORKSPACE_KEY } from '../sandbox/demo.ts'
import type { VoiceApiError } from '../upstream/errors.ts'
import type { CallRequest, CallResponse } from '../upstream/schemas.ts'
import type { Effects } from '../utils/effects.ts'
import { isBlocked, type DncOptions } from './dnc.ts'
import { DEFAULT_FOLLOW_UP } from './plan-follow-ups.ts'
import { DEFAULT_WINDOW, nextCallingTime, type CallingWindow } from './calling-window.ts'

/** What `scheduleCall` needs: a follow-up plan fits, and so does any call a recipe builds itself. */
export interface CallPlan {
  request: CallRequest
  campaign?: string | null
  /** The conversation this call continues (also sent as the request's conversation_id). */
  previousConversationId?: string | null
  /** The recipient's time zone: when given, the calling window is enforced again at send time. */
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
}

export type ScheduleCallOutcome =
  | { status: 'planned'; request: CallRequest }
  | { status: 'placed'; request: CallRequest; call: CallResponse; record: CallRecord }
  /** The same idempotency key was already used within 24 h: nothing was sent. */
  | { status: 'duplicate'; request: CallRequest; record: CallRecord }
  | { status: 'blocked'; request: CallRequest; reason: string }
  | { status: 'failed'; request: CallRequest; error: VoiceApiError; record: CallRecord | null }

function phoneOf(request: CallRequest): string {
  return request.parameters.find((p) => p.name === 'customer_phone')?.value ?? ''
}

/**
 * Places or schedules one call through the ledger (`placeCall`), after checking the do-not-call list
 * once more. The plan's idempotency key is kept as is — for follow-ups it is derived from campaign,
 * contact and attempt number, so running the same plan twice never calls twice. A `scheduled_for` that
 * has slipped into the past (a slow run) becomes an immediate call; one beyond the provider's 30 days is
 * refused here rather than by the provider. In a dry run the call goes into the plan instead.
 */
export async function scheduleCall(rt: Runtime, plan: CallPlan, effects: Effects, options: ScheduleCallOptions = {}): Promise<ScheduleCallOutcome> {
  const now = rt.clock.now()
  const request: CallRequest = { ...plan.request }
  if (request.scheduled_for !== undefined && !Number.isFinite(Date.parse(request.scheduled_for))) {
    throw new Error(`scheduled_for "${request.scheduled_for}" is not an ISO 8601 time`)
  }
  if (plan.timeZone) {
    // The plan may be older than now (a slow run, a dry run replayed): keep the call inside the window.
    const wanted = request.scheduled_for ? Math.max(Date.parse(request.scheduled_for), now) : now
    const at = nextCallingTime(wanted, plan.timeZone, plan.window ?? DEFAULT_WINDOW)
    if (at - now > DEFAULT_FOLLOW_UP.immediateWithinMs) request.scheduled_for = new Date(at).toISOString()
    else delete request.scheduled_for
  }
  if (request.scheduled_for) {
    const at = Date.parse(request.scheduled_for)
    if (at - now > DEFAULT_FOLLOW_UP.horizonMs) {
      return { status: 'blocked', request, reason: `scheduled_for ${request.scheduled_for} is beyond the provider's 30-day horizon` }
    }
    if (at <= now) delete request.scheduled_for
  }
  if (plan.previousConversationId && !request.conversation_id) request.conversation_id = plan.previousConversationId

  if (await isBlocked(rt, phoneOf(request), options.dnc)) {
    return { status: 'blocked', request, reason: 'on the do-not-call list' }
  }
  const effect = { kind: 'call' as const, request, recipe: options.recipe ?? null, campaign: plan.campaign ?? null, ...(plan.note ? { note: plan.note } : {}) }
  if (effects.dryRun) {
    effects.plan.push(effect)
    return { status: 'planned', request }
  }
  const result = await placeCall(rt, {
    apiKey: options.apiKey ?? rt.config.voiceApiKey ?? SANDBOX_WORKSPACE_KEY,
    request,
    recipe: options.recipe ?? null,
    campaign: plan.campaign ?? null,
    previousConversationId: plan.previousConversationId ?? request.conversation_id ?? null,
  })
  if (result.ok) {
    effects.plan.push(effect)
    return { status: 'placed', request, call: result.call, record: result.record }
  }
  if (result.duplicate) return { status: 'duplicate', request, record: result.record }
  rt.log.warn({ agent_id: request.agent_id, idempotency_key: request.idempotency_key, error: result.error.message }, 'call not placed')
  return { status: 'failed', request, error: result.error, record: result.record }
}
