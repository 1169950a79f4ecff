import { callResponseSchema, dataEnvelope, type CallRequest, type CallResponse } from './schemas.ts'

export interface CallAnswer {
  call: CallResponse
  /** What is off when the body is not the documented `{data: call}`; undefined when it is. */
  unexpectedShape: string | undefined
}

const record = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null)

/**
 * Reads the provider's 2xx answer to POST /v1/call. A 2xx means the call was accepted, whatever the body
 * looks like, so an answer off the documented shape is read as far as it goes instead of being refused:
 * refusing it reported a placed call as failed, and a caller retrying with a fresh key called the person
 * twice. Missing fields become null (`trace_id` '', as for a call recovered from a lost answer); the request
 * fills in `agent_id`, and `status` from whether it was scheduled.
 */
export function readCallAnswer(body: unknown, request: CallRequest): CallAnswer {
  const parsed = dataEnvelope(callResponseSchema).safeParse(body)
  if (parsed.success) return { call: parsed.data.data, unexpectedShape: undefined }
  const issue = parsed.error.issues[0]
  const unexpectedShape = `${issue?.path.join('.') ?? ''} ${issue?.message ?? ''}`.trim() || 'not the documented shape'
  // An answer without the envelope may still be the call itself.
  const outer = record(body)
  const data = record(outer?.data) ?? (outer && !('data' in outer) ? outer : {})
  const agentId = data.agent_id
  const call: CallResponse = {
    ...data,
    agent_id: typeof agentId === 'number' && Number.isSafeInteger(agentId) ? agentId : request.agent_id,
    conversation_id: text(data.conversation_id),
    scheduled_for: text(data.scheduled_for),
    status: text(data.status) ?? (request.scheduled_for ? 'scheduled' : 'initiated'),
    trace_id: text(data.trace_id) ?? '',
  }
  return { call, unexpectedShape }
}
