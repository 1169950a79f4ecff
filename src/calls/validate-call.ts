import { callRequestSchema, type CallRequest } from '../upstream/schemas.ts'
import { isZonedIsoDateTime } from '../utils/iso-datetime.ts'
import { pathOfString } from '../utils/path-of-string.ts'
import { MAX_CONVERSATION_ID_LENGTH, MAX_PHONE_LENGTH, idempotencyKeyProblem } from '../upstream/id-limits.ts'

/** The provider's scheduling horizon (spec → Limits). */
export const SCHEDULING_HORIZON_MS = 30 * 24 * 60 * 60 * 1000
/** A schedule time this far in the past is still taken as "now" (clock skew between caller and us). */
export const SCHEDULE_PAST_TOLERANCE_MS = 60 * 1000

export type CallValidation = { ok: true; request: CallRequest } | { ok: false; message: string }

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

const fail = (message: string): CallValidation => ({ ok: false, message })

/**
 * Checks a POST /v1/call body the way the provider does, so a bad request is answered 400 locally with
 * the spec's messages and never costs an upstream request (or a rate-limit token).
 */
export function validateCallRequest(body: unknown, now: number): CallValidation {
  if (!isRecord(body)) return fail('request body must be a JSON object')
  if (body.agent_id === undefined || body.agent_id === null) return fail('agent_id is required')
  if (typeof body.agent_id !== 'number' || !Number.isSafeInteger(body.agent_id)) return fail('agent_id must be an integer')
  if (body.parameters === undefined || body.parameters === null) return fail('customer_phone parameter is required')
  if (!Array.isArray(body.parameters)) return fail('parameters must be an array of {name, value} objects')
  for (const [i, p] of body.parameters.entries()) {
    if (!isRecord(p) || typeof p.name !== 'string' || typeof p.value !== 'string') {
      return fail(`parameters[${i}] must be an object with string name and value`)
    }
  }
  const nul = pathOfString(body, (text) => text.includes('\u0000'))
  if (nul !== undefined) return fail(`${nul} contains U+0000 (a NUL character); remove it`)
  const half = pathOfString(body, (text) => !text.isWellFormed())
  if (half !== undefined) return fail(`${half} holds half of a UTF-16 surrogate pair (an unpaired \\ud800–\\udfff); send whole characters`)
  // Once: the provider dials one of them (the sandbox the last), while the do-not-call check and the ledger read the
  // first — a second customer_phone went past the list to a number on it.
  const phones = (body.parameters as Array<{ name: string }>).flatMap((p, i) => (p.name === 'customer_phone' ? [i] : []))
  if (phones.length > 1) return fail(`customer_phone must be given once (parameters[${phones[0]}] and parameters[${phones[1]}] both name it)`)
  const phone = (body.parameters as Array<{ name: string; value: string }>).find((p) => p.name === 'customer_phone')
  if (!phone || phone.value.trim() === '') return fail('customer_phone parameter is required')
  if (phone.value.length > MAX_PHONE_LENGTH) return fail(`customer_phone must be at most ${MAX_PHONE_LENGTH} characters`)
  if (body.conversation_id !== undefined && typeof body.conversation_id !== 'string') return fail('conversation_id must be a string')
  if (typeof body.conversation_id === 'string' && body.conversation_id.length > MAX_CONVERSATION_ID_LENGTH) {
    return fail(`conversation_id must be at most ${MAX_CONVERSATION_ID_LENGTH} characters`)
  }
  if (body.idempotency_key !== undefined && (typeof body.idempotency_key !== 'string' || body.idempotency_key === '')) {
    return fail('idempotency_key must be a non-empty string')
  }
  const keyProblem = typeof body.idempotency_key === 'string' ? idempotencyKeyProblem(body.idempotency_key) : undefined
  if (keyProblem) return fail(`idempotency_key ${keyProblem}`)
  if (body.metadata !== undefined) {
    const m = body.metadata
    if (typeof m !== 'string' && !(isRecord(m) && Object.values(m).every((v) => typeof v === 'string'))) {
      return fail('metadata must be a string or an object of string values')
    }
  }
  const rc = body.retry_context
  if (rc !== undefined && !isRecord(rc)) return fail('retry_context must be an object')
  if (isRecord(rc)) {
    if (rc.collected_data !== undefined && !isRecord(rc.collected_data)) return fail('retry_context.collected_data must be an object')
    for (const k of ['retry_initial_message', 'retry_language', 'retry_stage_id']) {
      if (rc[k] !== undefined && typeof rc[k] !== 'string') return fail(`retry_context.${k} must be a string`)
    }
  }
  if (body.scheduled_for !== undefined && body.scheduled_for !== null) {
    if (typeof body.scheduled_for !== 'string' || !isZonedIsoDateTime(body.scheduled_for)) {
      return fail('scheduled_for must be an ISO 8601 datetime with a time zone')
    }
    const at = Date.parse(body.scheduled_for)
    if (at < now - SCHEDULE_PAST_TOLERANCE_MS) return fail('scheduled_for must be in the future')
    if (at > now + SCHEDULING_HORIZON_MS) return fail('scheduled_for must be within the next 30 days')
  }
  const { scheduled_for, ...rest } = body
  const parsed = callRequestSchema.safeParse(scheduled_for === null ? rest : body)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    return fail(`${issue?.path.join('.') || 'request'}: ${issue?.message ?? 'invalid value'}`)
  }
  return { ok: true, request: parsed.data }
}
