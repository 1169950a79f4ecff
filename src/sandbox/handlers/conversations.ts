import type { ConversationDetail, ConversationListItem } from '../../upstream/schemas.ts'
import type { ApiHandler } from '../context.ts'
import { notFound } from '../errors.ts'
import { json, readListQuery } from '../request.ts'
import type { ConversationRecord } from '../state.ts'
import { generateWav, parseRange } from '../wav.ts'

/** Recordings are a few seconds long whatever the call's length: enough to play, small to serve. */
export const RECORDING_MAX_SECONDS = 4

export const recordingPath = (id: string) => `/v1/conversations/${encodeURIComponent(id)}/recording`

function listItem(c: ConversationRecord): ConversationListItem {
  return {
    agent_id: c.agentId,
    contact_number: c.contactNumber,
    conversation_id: c.id,
    duration_seconds: c.durationSeconds,
    start_timestamp: c.startedAt,
    // Not ended yet: 0 (the field is an integer in the spec, never null).
    end_timestamp: c.endedAt ?? 0,
    status: c.status,
  }
}

/** GET /v1/conversations */
export const listConversations: ApiHandler = (ctx, { url, tenant }) => {
  const q = readListQuery(url)
  const page = ctx.state.listConversations(tenant.id, q)
  return json({ data: page.items.map(listItem), has_more: page.hasMore, total: page.total })
}

/** GET /v1/conversations/{id} */
export const getConversation: ApiHandler = (ctx, { params, tenant, baseUrl }) => {
  const c = ctx.state.conversation(tenant.id, params.id!)
  if (!c) throw notFound('conversation not found')
  const data: ConversationDetail = {
    agent_id: c.agentId,
    contact_number: c.contactNumber,
    conversation_id: c.id,
    duration_seconds: c.durationSeconds,
    failure_reason: c.failureReason,
    results: c.results,
    status: c.status,
    trace_id: c.traceId,
  }
  if (c.transcript) data.transcript = c.transcript
  if (c.hasRecording) data.recording_url = `${baseUrl}${recordingPath(c.id)}`
  return json({ data })
}

export function recordingBytes(c: ConversationRecord): Uint8Array<ArrayBuffer> {
  return generateWav(c.id, Math.min(RECORDING_MAX_SECONDS, Math.max(2, c.durationSeconds)))
}

/** GET /v1/conversations/{id}/recording — a WAV, with single byte-range support. */
export const getRecording: ApiHandler = (ctx, { req, params, tenant }) => {
  const c = ctx.state.conversation(tenant.id, params.id!)
  if (!c) throw notFound('conversation not found')
  if (!c.hasRecording) throw notFound('recording not found')
  const bytes = recordingBytes(c)
  const headers: Record<string, string> = {
    'content-type': 'audio/wav',
    'accept-ranges': 'bytes',
    'content-disposition': `attachment; filename="${c.id}.wav"`,
    etag: `"${c.id}"`,
    'cache-control': 'private, max-age=86400',
  }
  const range = parseRange(req.headers.get('range'), bytes.byteLength)
  if (range === 'unsatisfiable') {
    // An error body like every other error (spec: "Body shape for all errors"), with the size a client needs.
    const { 'content-type': _audio, ...rest } = headers
    return Response.json(
      { error: { message: `range not satisfiable: the recording is ${bytes.byteLength} bytes`, type: 'invalid_request' } },
      { status: 416, headers: { ...rest, 'content-range': `bytes */${bytes.byteLength}` } },
    )
  }
  if (range) {
    const part = bytes.slice(range.start, range.end + 1)
    return new Response(part, {
      status: 206,
      headers: { ...headers, 'content-length': String(part.byteLength), 'content-range': `bytes ${range.start}-${range.end}/${bytes.byteLength}` },
    })
  }
  return new Response(bytes, { status: 200, headers: { ...headers, 'content-length': String(bytes.byteLength) } })
}
