import { invalid } from './errors.ts'

/** Reads a JSON object body; wrong media type, malformed JSON or a non-object answer 400. */
export async function readJsonObject(req: Request): Promise<Record<string, unknown>> {
  const type = req.headers.get('content-type') ?? ''
  if (!/^application\/(.+\+)?json\b/i.test(type.trim())) throw invalid('Content-Type must be application/json')
  const text = await req.text()
  if (!text.trim()) throw invalid('request body must be a JSON object')
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch (error) {
    throw invalid(`request body is not valid JSON: ${(error as Error).message}`)
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('request body must be a JSON object')
  return body as Record<string, unknown>
}

/** Reads a multipart/form-data body; anything else answers 400. */
export async function readMultipart(req: Request): Promise<FormData> {
  const type = req.headers.get('content-type') ?? ''
  if (!/^multipart\/form-data\b/i.test(type.trim())) throw invalid('Content-Type must be multipart/form-data')
  try {
    return await req.formData()
  } catch {
    throw invalid('request body is not valid multipart/form-data')
  }
}

const INTEGER = /^-?\d+$/

/** `limit` (1..100, default 20), `offset` (≥ 0, default 0) and the optional `agent_id` filter. */
export function readListQuery(url: URL): { limit: number; offset: number; agentId: number | undefined } {
  const q = url.searchParams
  const limitRaw = q.get('limit')
  const offsetRaw = q.get('offset')
  const agentRaw = q.get('agent_id')
  const limit = limitRaw === null || limitRaw === '' ? 20 : Number(limitRaw)
  if (limitRaw !== null && limitRaw !== '' && (!INTEGER.test(limitRaw) || limit < 1 || limit > 100)) {
    throw invalid('limit must be an integer from 1 to 100')
  }
  const offset = offsetRaw === null || offsetRaw === '' ? 0 : Number(offsetRaw)
  if (offsetRaw !== null && offsetRaw !== '' && (!INTEGER.test(offsetRaw) || offset < 0 || !Number.isSafeInteger(offset))) {
    throw invalid('offset must be a non-negative integer')
  }
  let agentId: number | undefined
  if (agentRaw !== null && agentRaw !== '') {
    if (!INTEGER.test(agentRaw) || !Number.isSafeInteger(Number(agentRaw))) throw invalid('agent_id must be an integer')
    agentId = Number(agentRaw)
  }
  return { limit, offset, agentId }
}

/** A form field that must be an integer (agent_id of an upload). */
export function formInteger(form: FormData, name: string): number {
  const raw = form.get(name)
  if (raw === null || raw === '') throw invalid(`${name} is required`)
  if (typeof raw !== 'string' || !INTEGER.test(raw.trim()) || !Number.isSafeInteger(Number(raw))) throw invalid(`${name} must be an integer`)
  return Number(raw)
}

export const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })
