import type { CallResponse, RetryContext } from '../../upstream/schemas.ts'
import type { ApiHandler } from '../context.ts'
import { ApiFailure, invalid, notFound } from '../errors.ts'
import { parseConversationId } from '../ids.ts'
import { json, readJsonObject } from '../request.ts'
import { isZonedIsoDateTime } from '../../utils/iso-datetime.ts'

export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000
export const SCHEDULING_HORIZON_MS = 30 * 24 * 60 * 60 * 1000
/** A schedule up to a minute in the past is taken as "now" (clock skew between caller and provider). */
export const SCHEDULE_PAST_TOLERANCE_MS = 60 * 1000

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

interface ValidCall {
  agentId: number
  parameters: Record<string, string>
  phone: string
  conversationId: string | undefined
  idempotencyKey: string | undefined
  metadata: string | Record<string, string> | undefined
  retryContext: RetryContext | undefined
  scheduledAt: number | undefined
}

/** Field checks, in the order the messages are documented (spec → Errors). */
function validate(body: Record<string, unknown>, now: number): ValidCall {
  if (body.agent_id === undefined || body.agent_id === null) throw invalid('agent_id is required')
  if (typeof body.agent_id !== 'number' || !Number.isSafeInteger(body.agent_id)) throw invalid('agent_id must be an integer')
  if (body.parameters === undefined || body.parameters === null) throw invalid('customer_phone parameter is required')
  if (!Array.isArray(body.parameters)) throw invalid('parameters must be an array of {name, value} objects')
  const parameters: Record<string, string> = {}
  for (const [i, p] of body.parameters.entries()) {
    if (!isRecord(p) || typeof p.name !== 'string' || typeof p.value !== 'string') {
      throw invalid(`parameters[${i}] must be an object with string name and value`)
    }
    parameters[p.name] = p.value
  }
  const phone = parameters.customer_phone?.trim()
  if (!phone) throw invalid('customer_phone parameter is required')
  if (body.conversation_id !== undefined && typeof body.conversation_id !== 'string') throw invalid('conversation_id must be a string')
  if (body.idempotency_key !== undefined && (typeof body.idempotency_key !== 'string' || body.idempotency_key === '')) {
    throw invalid('idempotency_key must be a non-empty string')
  }
  const m = body.metadata
  if (m !== undefined && typeof m !== 'string' && !(isRecord(m) && Object.values(m).every((v) => typeof v === 'string'))) {
    throw invalid('metadata must be a string or an object of string values')
  }
  const rc = body.retry_context
  if (rc !== undefined && !isRecord(rc)) throw invalid('retry_context must be an object')
  if (isRecord(rc)) {
    if (rc.collected_data !== undefined && !isRecord(rc.collected_data)) throw invalid('retry_context.collected_data must be an object')
    for (const k of ['retry_initial_message', 'retry_language', 'retry_stage_id']) {
      if (rc[k] !== undefined && typeof rc[k] !== 'string') throw invalid(`retry_context.${k} must be a string`)
    }
  }
  let scheduledAt: number | undefined
  if (body.scheduled_for !== undefined && body.scheduled_for !== null) {
    const s = body.scheduled_for
    if (typeof s !== 'string' || !isZonedIsoDateTime(s)) {
      throw invalid('scheduled_for must be an ISO 8601 datetime with a time zone')
    }
    scheduledAt = Date.parse(s)
    if (scheduledAt < now - SCHEDULE_PAST_TOLERANCE_MS) throw invalid('scheduled_for must be in the future')
    if (scheduledAt > now + SCHEDULING_HORIZON_MS) throw invalid('scheduled_for must be within the next 30 days')
    // Taken as now, as an immediate call: answered `initiated`, through the per-number and concurrency limits —
    // not `scheduled` at a time already past, going round them.
    if (scheduledAt <= now) scheduledAt = undefined
  }
  return {
    agentId: body.agent_id,
    parameters: { ...parameters, customer_phone: phone },
    phone,
    conversationId: body.conversation_id as string | undefined,
    idempotencyKey: body.idempotency_key as string | undefined,
    metadata: m as ValidCall['metadata'],
    retryContext: rc as RetryContext | undefined,
    scheduledAt,
  }
}

/**
 * The destination a per-number limit counts: its digits after the international prefix, however that was written —
 * `+91 95555 55550`, `0091…` and `91…` are one person (as `+91-95555-55550` already was), and a client varying the form
 * got past the limit. The sandbox has no default country, so a national form (`09555…`) stays its own destination.
 */
function destinationDigits(phone: string): string {
  return phone.replace(/[^\d+]/g, '').replace(/^(\+|00)/, '')
}

/** POST /v1/call */
export const createCall: ApiHandler = async (ctx, { req, tenant }) => {
  const body = await readJsonObject(req)
  const now = ctx.clock.now()
  const call = validate(body, now)
  const agent = ctx.state.agentOf(tenant, call.agentId)
  if (!agent) throw notFound('agent not found')
  if (!agent.fromPhone) throw invalid('agent has no phone number configured')
  let chain: string | undefined
  if (call.conversationId !== undefined) {
    const parsed = parseConversationId(call.conversationId)
    if (!parsed || !ctx.state.conversation(tenant.id, call.conversationId)) throw notFound('conversation not found')
    chain = parsed.chain
  }
  if (call.idempotencyKey && ctx.state.idempotencyUsed(tenant.id, agent.id, call.idempotencyKey, now)) {
    throw new ApiFailure(409, 'duplicate_request', 'idempotency key already used')
  }
  const immediate = call.scheduledAt === undefined
  if (immediate) {
    const numberKey = `${tenant.id}:${destinationDigits(call.phone)}`
    const wait = ctx.numberLimiter.retryAfter(numberKey, now)
    if (wait !== undefined) {
      throw new ApiFailure(429, 'rate_limit_exceeded', 'rate limit exceeded for this number', {}, { 'retry-after': String(wait) })
    }
    const current = ctx.engine.activeCount(tenant.id)
    if (current >= ctx.maxCalls) {
      throw new ApiFailure(
        429,
        'concurrent_call_limit_exceeded',
        `concurrent call limit reached. ${ctx.maxCalls} simultaneous calls allowed.`,
        { current_calls: current, max_calls: ctx.maxCalls },
        { 'retry-after': String(ctx.engine.secondsUntilSlot(tenant.id)) },
      )
    }
    ctx.numberLimiter.record(numberKey, now)
  }
  // Only an accepted call uses up its key: a caller retrying a 429 with the same key must get through.
  if (call.idempotencyKey) ctx.state.rememberIdempotency(tenant.id, agent.id, call.idempotencyKey, now, IDEMPOTENCY_WINDOW_MS)
  const order = {
    tenant,
    agent,
    traceId: ctx.ids.traceId(),
    toPhone: call.phone,
    parameters: call.parameters,
    retryContext: call.retryContext,
    metadata: call.metadata,
    chain,
    followUp: call.retryContext !== undefined || call.conversationId !== undefined,
    platformAttempt: 1,
  }
  let data: CallResponse
  if (immediate) {
    ctx.engine.start(order)
    ctx.counters.callsAccepted++
    // Key order as the provider serializes it.
    data = { agent_id: agent.id, conversation_id: null, scheduled_for: null, status: 'initiated', trace_id: order.traceId }
  } else {
    const at = call.scheduledAt!
    ctx.timers.at(at, () => ctx.engine.startOrQueue(order))
    ctx.counters.callsAccepted++
    ctx.counters.callsScheduled++
    data = { agent_id: agent.id, conversation_id: null, scheduled_for: new Date(at).toISOString(), status: 'scheduled', trace_id: order.traceId }
  }
  return json({ data })
}
