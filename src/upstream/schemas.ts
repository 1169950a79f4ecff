import { z } from 'zod'

/**
 * The provider's resources (spec/voice-api.md, with what spec/provider-notes.md adds). Every type the
 * rest of switchboard uses for provider data is `z.infer` of a schema here. Response schemas are loose
 * (`z.looseObject`): a provider that adds a field must not break us; request schemas are strict about what
 * the spec requires and keep what it does not list (a caller's field the provider accepts beyond the spec reaches
 * it through the proxy as sent).
 */

// ── Call creation ───────────────────────────────────────────────────────────────────────────────
const callParameterShape = { name: z.string(), value: z.string() }
export const callParameterSchema = z.looseObject(callParameterShape)
export type CallParameter = z.infer<typeof callParameterSchema>

const retryContextShape = {
  collected_data: z.record(z.string(), z.unknown()).optional(),
  retry_initial_message: z.string().optional(),
  retry_language: z.string().optional(),
  retry_stage_id: z.string().optional(),
}
/** As a caller sent it through the proxy: what the spec does not list goes on to the provider. */
export const retryContextSchema = z.looseObject(retryContextShape)
/**
 * As a recipe gives it (`scheduleCall`'s `retryContext`, `ctx.client.createCall`'s `retry_context`): the spec's four
 * fields alone — a misspelt one (`retry_languag`) was sent as written and the provider's context lost.
 */
export const strictRetryContextSchema = z.strictObject(retryContextShape)
export type RetryContext = z.infer<typeof strictRetryContextSchema>

/** `metadata` is declared a string; one example sends an object of strings, so both are accepted. */
export const metadataSchema = z.union([z.string(), z.record(z.string(), z.string())])

const callRequestShape = {
  agent_id: z.number().int(),
  parameters: z.array(callParameterSchema),
  conversation_id: z.string().optional(),
  idempotency_key: z.string().min(1).optional(),
  metadata: metadataSchema.optional(),
  retry_context: retryContextSchema.optional(),
  scheduled_for: z.string().optional(),
}
/** A call request as a caller sent it through the proxy: what the spec does not list reaches the provider as sent. */
export const callRequestSchema = z.looseObject(callRequestShape)
/**
 * A call request as a recipe makes it (`ctx.client.createCall`): the spec's fields alone, so a misspelt one is a
 * mistake named at once — `schedule_for` placed the call at once instead of scheduling it. Its type is `CallRequest`,
 * so an editor and `recipes check` refuse the misspelling too.
 */
export const recipeCallRequestSchema = z.strictObject({
  ...callRequestShape,
  parameters: z.array(z.strictObject(callParameterShape)),
  retry_context: strictRetryContextSchema.optional(),
})
/** Every key a recipe's call request may have, nested ones included (for "did you mean"). */
export const CALL_REQUEST_KEYS = [...Object.keys(callRequestShape), ...Object.keys(retryContextShape), ...Object.keys(callParameterShape)]
export type CallRequest = z.infer<typeof recipeCallRequestSchema>

export const callResponseSchema = z.looseObject({
  agent_id: z.number().int(),
  conversation_id: z.string().nullable(),
  scheduled_for: z.string().nullable(),
  status: z.string(),
  trace_id: z.string(),
})
export type CallResponse = z.infer<typeof callResponseSchema>

// ── Batches ─────────────────────────────────────────────────────────────────────────────────────
export const batchCallSchema = z.looseObject({
  id: z.number().int(),
  name: z.string(),
  agent_id: z.number().int(),
  status: z.string(),
  total_recipients: z.number().int(),
  created_at: z.string(),
  scheduled_for: z.string().nullable().optional(),
  updated_at: z.string().nullable().optional(),
})
export type BatchCall = z.infer<typeof batchCallSchema>

export const batchMetricsSchema = z.looseObject({
  avg_duration_seconds: z.number(),
  busy_count: z.number().int(),
  completed_count: z.number().int(),
  failed_count: z.number().int(),
  in_progress_count: z.number().int(),
  no_answer_count: z.number().int(),
  pending_retry_count: z.number().int(),
  socket_failure_count: z.number().int(),
  success_count: z.number().int(),
  success_rate: z.number(),
  total_processed: z.number().int(),
  unreachable_count: z.number().int(),
})
export type BatchMetrics = z.infer<typeof batchMetricsSchema>

// ── Conversations ───────────────────────────────────────────────────────────────────────────────
/** The seven statuses the provider documents; others ("provider-specific failure statuses") may occur. */
export const TERMINAL_STATUSES = [
  'completed',
  'failed',
  'busy',
  'no_answer',
  'socket_failure',
  'telephony_failed',
  'unreachable',
] as const
export type TerminalStatus = (typeof TERMINAL_STATUSES)[number]

/** Statuses a live call passes through before its outcome. Anything else is an outcome (terminal). */
export const NON_TERMINAL_STATUSES = ['scheduled', 'queued', 'initiated', 'ringing', 'in_progress'] as const

export function isTerminalStatus(status: string): boolean {
  return !(NON_TERMINAL_STATUSES as readonly string[]).includes(status)
}

export const conversationListItemSchema = z.looseObject({
  agent_id: z.number().int(),
  contact_number: z.string(),
  conversation_id: z.string(),
  duration_seconds: z.number().int(),
  /** Unix epoch milliseconds (provider-notes). */
  start_timestamp: z.number().int(),
  end_timestamp: z.number().int(),
  status: z.string(),
})
export type ConversationListItem = z.infer<typeof conversationListItemSchema>

export const transcriptTurnSchema = z.object({ role: z.string(), message: z.string() })
export type TranscriptTurn = z.infer<typeof transcriptTurnSchema>

export const conversationDetailSchema = z.looseObject({
  agent_id: z.number().int(),
  contact_number: z.string(),
  conversation_id: z.string(),
  duration_seconds: z.number().int(),
  failure_reason: z.string().nullable(),
  results: z.record(z.string(), z.unknown()),
  status: z.string(),
  trace_id: z.string(),
  transcript: z.array(transcriptTurnSchema).optional(),
  recording_url: z.string().optional(),
})
export type ConversationDetail = z.infer<typeof conversationDetailSchema>

// ── Transcription ───────────────────────────────────────────────────────────────────────────────
export const TRANSCRIPTION_LANGUAGES = [
  'hi-IN', 'bn-IN', 'kn-IN', 'ml-IN', 'mr-IN', 'pa-IN', 'ta-IN', 'te-IN', 'en-IN', 'gu-IN', 'as-IN', 'ur-IN', 'unknown',
] as const

export const utteranceSchema = z.object({
  speaker: z.string(),
  text: z.string(),
  /** seconds */
  start: z.number(),
  end: z.number(),
})
export type Utterance = z.infer<typeof utteranceSchema>

export const transcriptionJobSchema = z.looseObject({
  id: z.string(),
  engine: z.string(),
  status: z.string(),
  text: z.string().optional(),
  language: z.string().optional(),
  utterances: z.array(utteranceSchema).optional(),
})
export type TranscriptionJob = z.infer<typeof transcriptionJobSchema>

// ── Envelopes and errors ────────────────────────────────────────────────────────────────────────
export const dataEnvelope = <T extends z.ZodType>(schema: T) => z.looseObject({ data: schema })

export const listEnvelope = <T extends z.ZodType>(schema: T) =>
  z.looseObject({ data: z.array(schema), has_more: z.boolean(), total: z.number().int() })

export const conversationListSchema = listEnvelope(conversationListItemSchema)
export type ConversationList = z.infer<typeof conversationListSchema>

/** The batch list envelope is "not shown" in the spec; the conversation list's shape is the one used. */
export const batchListSchema = listEnvelope(batchCallSchema)
export type BatchList = z.infer<typeof batchListSchema>

export const ERROR_TYPES = [
  'invalid_request',
  'authentication_error',
  'not_found',
  'duplicate_request',
  'rate_limit_exceeded',
  'concurrent_call_limit_exceeded',
  'internal_error',
] as const
export type ErrorType = (typeof ERROR_TYPES)[number]

export const errorBodySchema = z.object({
  error: z.looseObject({
    message: z.string(),
    type: z.string(),
    current_calls: z.number().int().optional(),
    max_calls: z.number().int().optional(),
  }),
})
export type ErrorBody = z.infer<typeof errorBodySchema>

// ── Webhooks ────────────────────────────────────────────────────────────────────────────────────
/** Whether object type `T` names members (a record names none: only its index). */
type NamesMembers<T> = [keyof { [K in keyof T as string extends K ? never : number extends K ? never : K]: 1 }] extends [never] ? false : true

/**
 * A loose schema's output as code reads it: the members the spec names, without the index signature `z.looseObject`
 * adds — with it, a misspelt member (`event.data.call.stauts`) was `unknown` rather than a type error, so a recipe's
 * check was silently always false. A record (no named members, `results`) keeps its index. The parsed value still
 * holds whatever the provider added; code that wants it reads it as the record it is.
 */
export type Known<T> = T extends readonly (infer U)[]
  ? Array<Known<U>>
  : T extends object
    ? NamesMembers<T> extends true
      ? { [K in keyof T as string extends K ? never : number extends K ? never : K]: Known<T[K]> }
      : T
    : T

export const WEBHOOK_EVENT_TYPES = [
  'call.completed',
  'call.failed',
  'call.busy',
  'call.no_answer',
  'call.socket_failure',
  'call.telephony_failed',
  'call.unreachable',
] as const
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number]

/** The conversation status an event type reports. */
export function statusOfEventType(type: WebhookEventType): TerminalStatus {
  return type.slice('call.'.length) as TerminalStatus
}

/** `value` without its `null` members: the provider writes an absent member as `null` (provider-notes). */
function withoutNulls(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value
  return Object.fromEntries(Object.entries(value).filter(([, member]) => member !== null))
}

export const webhookCallSchema = z.looseObject({
  agent_id: z.number().int(),
  /** An object name → value here, unlike the request's array; a `null` value is an absent one. */
  call_parameters: z.preprocess((value) => withoutNulls(value ?? undefined), z.record(z.string(), z.string()).default({})),
  conversation_id: z.string(),
  duration_seconds: z.number().nullable(),
  started_at: z.string().nullable(),
  ended_at: z.string().nullable(),
  failure_reason: z.string().nullable(),
  from_phone: z.string().nullable(),
  to_phone: z.string(),
  recording_url: z.string().nullable(),
  status: z.string(),
  trace_id: z.string(),
})
export type WebhookCall = Known<z.infer<typeof webhookCallSchema>>

export const webhookRetrySchema = z.looseObject({
  attempt_number: z.number().int(),
  is_final_attempt: z.boolean(),
  max_attempts: z.number().int(),
  next_retry_at: z.string().nullable(),
})
export type WebhookRetry = Known<z.infer<typeof webhookRetrySchema>>

export const webhookDataSchema = z.looseObject({
  call: webhookCallSchema,
  results: z.record(z.string(), z.unknown()).nullable().default({}),
  retry: webhookRetrySchema.nullable().optional(),
  retry_context: z.preprocess(withoutNulls, retryContextSchema.nullable().optional()),
  /** Lines `BOT: …` / `HUMAN: …`; only for completed calls on targets that include it. */
  transcript: z.string().nullable().optional(),
})
export type WebhookData = Known<z.infer<typeof webhookDataSchema>>

/** A status that can name an event type: lower-case letters, digits and `_` (`no_answer`, `voicemail`). */
const STATUS_NAME = /^[a-z0-9_]+$/

/**
 * The seven documented types, or another `call.<status>`: the spec says "provider-specific failure statuses may
 * also occur", and such an event is still a call's outcome (its `data.call.status` says which).
 */
const webhookEventTypeSchema = z.union([
  z.enum(WEBHOOK_EVENT_TYPES),
  z.custom<`call.${string}`>((type) => typeof type === 'string' && type.startsWith('call.') && STATUS_NAME.test(type.slice('call.'.length)), 'a call.<status> event type'),
])

/** The event type that reports a conversation status: `call.<status>`, or `call.failed` for one that names no type. */
export function eventTypeOfStatus(status: string): `call.${string}` {
  return STATUS_NAME.test(status) ? `call.${status}` : 'call.failed'
}

export const webhookEventSchema = z.looseObject({
  event_id: z.string().min(1),
  event_type: webhookEventTypeSchema,
  /** ISO 8601: when the event was created. */
  timestamp: z.string(),
  data: webhookDataSchema,
})
export type WebhookEvent = Known<z.infer<typeof webhookEventSchema>>
/** An event as sent, with whatever members the spec does not name (the sandbox's `metadata`, reconcile's `source`). */
export type WebhookEventBody = z.infer<typeof webhookEventSchema>

/** Turns the webhook's transcript string into the Conversations API's array of {role, message}. */
export function parseWebhookTranscript(text: string | null | undefined): TranscriptTurn[] {
  if (!text) return []
  const turns: TranscriptTurn[] = []
  for (const line of text.split(/\r?\n/)) {
    const match = /^\s*(BOT|HUMAN|AGENT|USER|ASSISTANT)\s*:\s?(.*)$/i.exec(line)
    if (match) {
      const speaker = match[1]!.toUpperCase()
      turns.push({ role: speaker === 'HUMAN' || speaker === 'USER' ? 'human' : 'agent', message: match[2]! })
    } else if (line.trim() && turns.length > 0) {
      // A line without a speaker continues the previous turn (multi-line messages).
      const last = turns[turns.length - 1]!
      last.message += `\n${line}`
    }
  }
  return turns
}

/** The inverse, used by the sandbox to render transcripts into webhooks. */
export function formatWebhookTranscript(turns: TranscriptTurn[]): string {
  return turns.map((t) => `${t.role === 'human' ? 'HUMAN' : 'BOT'}: ${t.message}`).join('\n')
}
