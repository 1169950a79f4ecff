import { z } from 'zod'
import { callRequestSchema, strictRetryContextSchema, metadataSchema } from '../upstream/schemas.ts'
import { checkArgument } from '../utils/argument-error.ts'
import { isValidTimeZone, type CallingWindow } from './calling-window.ts'
import { northAmericanZone } from './zone-abbreviations.ts'
import { isZonedIsoDateTime } from '../utils/iso-datetime.ts'
import { EARLIEST_KEPT_MS, LATEST_KEPT_MS } from '../utils/time-range.ts'
import { MAX_CONVERSATION_ID_LENGTH, MAX_IDEMPOTENCY_KEY_LENGTH, MAX_PHONE_LENGTH, idempotencyKeyProblem } from '../upstream/id-limits.ts'

/**
 * What `scheduleCall` accepts. A recipe usually writes the short form (`{ agentId, phone, … }`); the
 * follow-up planner hands over a full plan (`{ request, … }`). Both are checked here, at the boundary,
 * so a mistake is named by its argument instead of surfacing later as a driver or provider error.
 */
export interface NewCall {
  /** The agent that places the call (sandbox: 101). */
  agentId: number
  /** The number to call, in any common form (`98765 43211`, `+91 98765-43211`); it becomes E.164. */
  phone: string
  /** Call parameters besides `customer_phone` (values become strings). */
  parameters?: Record<string, string | number | boolean>
  /** When to call (ISO 8601 or a Date); moved into the recipient's calling window. Default: now (or the next opening). */
  scheduledFor?: string | Date
  /** Campaign label on the calls ledger and in reports. */
  campaign?: string
  /** Makes re-runs safe: a key used within 24 h is never called again. Default: a fresh key per call. */
  idempotencyKey?: string
  /** Context for a follow-up (`collected_data`, `retry_initial_message`, …). */
  retryContext?: z.input<typeof strictRetryContextSchema>
  /** The conversation this call continues (sent as `conversation_id`). */
  conversationId?: string
  metadata?: string | Record<string, string>
  /** The recipient's time zone, when the number's country has several (else from the number, else the recipe's). */
  timeZone?: string
  /** Local calling hours; default 09:00–21:00. */
  window?: CallingWindow
  /** Why this call, shown in the plan. */
  note?: string
}

/** Minutes since midnight of "HH:MM" (already matched by `hhmm`'s pattern). */
const minutesOfDay = (time: string) => Number(time.split(':')[0]) * 60 + Number(time.split(':')[1])
const hhmm = z
  .string()
  .regex(/^\d{1,2}:\d{2}$/, { error: 'must look like "09:00"' })
  .refine((time) => Number(time.split(':')[1]) <= 59 && minutesOfDay(time) <= 24 * 60, { error: 'must be a time of day, 00:00 to 24:00' })
// Checked here, where the recipe's argument is named: a window that closes before it opens failed later, deep in the
// planning, with a message that named neither the function nor the argument.
export const callingWindowSchema = z
  .object({ start: hhmm, end: hhmm })
  .refine((w) => minutesOfDay(w.end) > minutesOfDay(w.start), { error: 'must be after start (a window is one stretch of a day, e.g. { start: "09:00", end: "21:00" })', path: ['end'] })

// A recipient's zone often comes from contact data, where `EST` or `Eastern` is how a US number's zone is written:
// taken here, and read as a CSV's timezone column reads it (`givenTimeZone`, once the number's country is known).
const timeZone = z
  .string()
  .refine((tz) => isValidTimeZone(tz) || northAmericanZone(tz) !== undefined, { error: 'must be an IANA time zone such as "Asia/Kolkata"' })

/** A time with its zone (src/utils/iso-datetime.ts): a zoneless one would be read in the server's own zone. */
const zonedTime = z.string().refine(isZonedIsoDateTime, { error: 'must be an ISO 8601 time with its time zone, e.g. "2026-01-15T10:00:00+05:30" or "2026-01-15T04:30:00Z"' })

export const newCallSchema = z.strictObject({
  agentId: z.number({ error: 'must be the agent id (a whole number, e.g. 101)' }).int({ error: 'must be a whole number' }),
  phone: z.string({ error: 'must be the phone number as a string, e.g. "98765 43210" or "+919876543210"' }).max(MAX_PHONE_LENGTH, { error: `must be at most ${MAX_PHONE_LENGTH} characters (a phone number)` }),
  parameters: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
  scheduledFor: z
    // Within years 1–9999: the last instant Date holds has no ISO text in a zone east of UTC ("Invalid time value").
    .union([z.date().min(new Date(EARLIEST_KEPT_MS), { error: 'must be a time in the years 1–9999' }).max(new Date(LATEST_KEPT_MS), { error: 'must be a time in the years 1–9999' }), zonedTime])
    .optional(),
  campaign: z.string().optional(),
  idempotencyKey: z
    .string()
    .min(1)
    .max(MAX_IDEMPOTENCY_KEY_LENGTH, { error: `must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters (a UUID is 36)` })
    .superRefine((key, ctx) => {
      // The length has its own message above (.max): said once, not twice.
      if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH) return
      const problem = idempotencyKeyProblem(key)
      if (problem) ctx.addIssue({ code: 'custom', message: problem })
    })
    .optional(),
  retryContext: strictRetryContextSchema.optional(),
  conversationId: z.string().min(1).max(MAX_CONVERSATION_ID_LENGTH, { error: `must be at most ${MAX_CONVERSATION_ID_LENGTH} characters` }).optional(),
  metadata: metadataSchema.optional(),
  timeZone: timeZone.optional(),
  window: callingWindowSchema.optional(),
  note: z.string().optional(),
})

export const callPlanSchema = z.object({
  request: callRequestSchema.extend({ scheduled_for: zonedTime.optional() }),
  campaign: z.string().nullable().optional(),
  previousConversationId: z.string().nullable().optional(),
  timeZone: timeZone.optional(),
  window: callingWindowSchema.optional(),
  note: z.string().optional(),
})

export type CheckedPlan = z.output<typeof callPlanSchema>

/** The short form's keys and its retry context's, for "did you mean" on a misspelt one. */
const NEW_CALL_KEYS = [...Object.keys(newCallSchema.shape), ...Object.keys(strictRetryContextSchema.shape)]

/** Validates either form and returns a plan (the short form's phone still raw: `scheduleCall` normalizes it). */
export function toCallPlan(value: unknown): CheckedPlan {
  const isPlan = typeof value === 'object' && value !== null && 'request' in value
  if (isPlan) {
    return checkArgument(callPlanSchema, value, {
      fn: 'scheduleCall',
      arg: 'call',
      expected: 'a plan { request: { agent_id, parameters: [{ name: "customer_phone", value }] }, campaign?, timeZone? }',
    })
  }
  const call = checkArgument(newCallSchema, value, {
    fn: 'scheduleCall',
    arg: 'call',
    expected: '{ agentId: number, phone: string, parameters?, scheduledFor?, campaign?, idempotencyKey?, retryContext?, conversationId?, timeZone?, window?, note? }',
    knownKeys: NEW_CALL_KEYS,
    hint: (v) =>
      typeof v === 'object' && v !== null && ('agent_id' in v || 'customer_phone' in v)
        ? 'The short form is camelCase ({ agentId, phone }); the provider\'s snake_case request goes inside { request: … }'
        : undefined,
  })
  const parameters = [
    { name: 'customer_phone', value: call.phone },
    ...Object.entries(call.parameters ?? {}).map(([name, value]) => ({ name, value: String(value) })),
  ]
  return {
    request: {
      agent_id: call.agentId,
      parameters,
      ...(call.scheduledFor !== undefined
        ? { scheduled_for: call.scheduledFor instanceof Date ? call.scheduledFor.toISOString() : call.scheduledFor }
        : {}),
      ...(call.idempotencyKey ? { idempotency_key: call.idempotencyKey } : {}),
      ...(call.retryContext ? { retry_context: call.retryContext } : {}),
      ...(call.conversationId ? { conversation_id: call.conversationId } : {}),
      ...(call.metadata !== undefined ? { metadata: call.metadata } : {}),
    },
    campaign: call.campaign ?? null,
    previousConversationId: call.conversationId ?? null,
    ...(call.timeZone ? { timeZone: call.timeZone } : {}),
    ...(call.window ? { window: call.window } : {}),
    ...(call.note ? { note: call.note } : {}),
  }
}
