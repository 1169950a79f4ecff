import { invalid } from './errors.ts'
import { readLimited } from '../utils/read-limited.ts'
import { MAX_CSV_BYTES } from './csv.ts'
import { MAX_AUDIO_BYTES } from './transcription.ts'

/**
 * A call request is a few KB: far more than any real one, far less than memory. The proxy's limit (1 MiB) plus room
 * for the `idempotency_key` it adds to a body that has none: a body the proxy took, just under its limit, was refused
 * here once the key made it larger.
 */
export const MAX_JSON_BYTES = 1024 * 1024 + 1024
/** Room for a form's other fields and its part headers beside the file. */
const FORM_OVERHEAD_BYTES = 64 * 1024
/**
 * The largest form a route reads: its file's limit (the spec's 5 MB CSV, 25 MB audio) plus the form around it, and what
 * a larger one is told — the file's limit, as the route's own check says it ("request body is larger than 5184 KB"
 * named a figure no document gives).
 */
export const MAX_FORM_BYTES = {
  csv: { bytes: MAX_CSV_BYTES + FORM_OVERHEAD_BYTES, tooLarge: `file is larger than ${MAX_CSV_BYTES / 1024 / 1024} MB` },
  audio: { bytes: MAX_AUDIO_BYTES + FORM_OVERHEAD_BYTES, tooLarge: `audio file is larger than ${MAX_AUDIO_BYTES / 1024 / 1024} MB` },
} as const

/**
 * The body, counted as it streams, up to `max` bytes: the limits the handlers check (a file's size, a CSV's rows) come
 * after parsing, so without this a body of any size was read whole into memory first — on the public demo key.
 */
async function bodyWithin(req: Request, max: number, tooLarge: string): Promise<Uint8Array> {
  const declared = Number(req.headers.get('content-length') ?? '')
  const read = Number.isFinite(declared) && declared > max ? { ok: false as const } : await readLimited(req.body, max)
  if (!read.ok) throw invalid(tooLarge)
  return read.bytes
}

/** Reads a JSON object body; wrong media type, malformed JSON or a non-object answer 400. */
export async function readJsonObject(req: Request): Promise<Record<string, unknown>> {
  const type = req.headers.get('content-type') ?? ''
  if (!/^application\/(.+\+)?json\b/i.test(type.trim())) throw invalid('Content-Type must be application/json')
  const text = new TextDecoder().decode(await bodyWithin(req, MAX_JSON_BYTES, `request body is larger than ${Math.round(MAX_JSON_BYTES / 1024)} KB`))
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

/** Reads a multipart/form-data body of at most `max` bytes; anything else answers 400. */
export async function readMultipart(req: Request, max: { bytes: number; tooLarge: string }): Promise<FormData> {
  const type = req.headers.get('content-type') ?? ''
  if (!/^multipart\/form-data\b/i.test(type.trim())) throw invalid('Content-Type must be multipart/form-data')
  const bytes = await bodyWithin(req, max.bytes, max.tooLarge)
  try {
    // readLimited's bytes are its own ArrayBuffer's (chunks copied into one, or the stream's single chunk).
    return await new Response(bytes as Uint8Array<ArrayBuffer>, { headers: { 'content-type': type } }).formData()
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
