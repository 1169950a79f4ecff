import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * A small provider stand-in on 127.0.0.1 for these tests: it answers POST /v1/call and POST
 * /v1/batch-call with the provider's envelopes (spec/voice-api.md) and records every request it gets,
 * so a test can assert what reached "upstream" — and, as importantly, what did not. A call continuing
 * UNKNOWN_CONVERSATION is refused with 404, as the provider refuses one it does not know.
 */
export interface RecordedRequest {
  method: string
  path: string
  headers: Record<string, string | string[] | undefined>
  body: Buffer
}

export interface RecordingUpstream {
  url: string
  requests: RecordedRequest[]
  close(): Promise<void>
}

/** A `conversation_id` this upstream answers 404 `not_found` for (a call refused by the provider). */
export const UNKNOWN_CONVERSATION = 'conv_unknown_to_upstream'

export async function startRecordingUpstream(): Promise<RecordingUpstream> {
  const requests: RecordedRequest[] = []
  let seq = 0
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      const path = (req.url ?? '/').split('?')[0]!
      requests.push({ method: req.method ?? 'GET', path, headers: req.headers, body })
      res.setHeader('content-type', 'application/json')
      if (req.method === 'POST' && path === '/v1/call') {
        const request = JSON.parse(body.toString('utf8')) as { agent_id: number; scheduled_for?: string; conversation_id?: string }
        // As the provider refuses a follow-up of a conversation it does not know.
        if (request.conversation_id === UNKNOWN_CONVERSATION) {
          res.statusCode = 404
          res.end(JSON.stringify({ error: { message: 'conversation not found', type: 'not_found' } }))
          return
        }
        seq++
        res.end(
          JSON.stringify({
            data: {
              agent_id: request.agent_id,
              conversation_id: null,
              scheduled_for: request.scheduled_for ?? null,
              status: request.scheduled_for ? 'scheduled' : 'initiated',
              trace_id: `00000000-0000-4000-8000-${String(seq).padStart(12, '0')}`,
            },
          }),
        )
        return
      }
      if (req.method === 'POST' && path === '/v1/batch-call') {
        seq++
        const text = body.toString('utf8')
        const name = /name="name"\r\n\r\n([^\r]*)/.exec(text)?.[1] ?? ''
        const agent = Number(/name="agent_id"\r\n\r\n(\d+)/.exec(text)?.[1] ?? 0)
        res.end(JSON.stringify({ data: { id: seq, name, agent_id: agent, status: 'pending', total_recipients: 0, created_at: '2026-01-01T00:00:00Z' } }))
        return
      }
      res.statusCode = 404
      res.end(JSON.stringify({ error: { message: 'not found', type: 'not_found' } }))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve()))),
  }
}

/** The CSV file part of a recorded multipart upload. */
export function uploadedCsv(request: RecordedRequest): string {
  const text = request.body.toString('utf8')
  const match = /filename="[^"]*"\r\nContent-Type: text\/csv\r\n\r\n([\s\S]*?)\r\n--/i.exec(text)
  if (!match) throw new Error('no CSV file part in the upload')
  return match[1]!
}
