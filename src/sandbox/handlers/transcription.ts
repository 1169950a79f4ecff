import type { ApiHandler } from '../context.ts'
import { invalid, notFound } from '../errors.ts'
import { json, readMultipart, MAX_FORM_BYTES } from '../request.ts'
import { serializeJob } from '../transcription.ts'

const text = (v: FormDataEntryValue | null) => (typeof v === 'string' ? v : v === null ? null : '')

/** POST /v1/transcription/jobs (multipart: audio, languages?, diarize?, format?) — not wrapped in {data}. */
export const createTranscriptionJob: ApiHandler = async (ctx, { req, tenant }) => {
  const form = await readMultipart(req, MAX_FORM_BYTES.audio)
  const audio = form.get('audio')
  if (audio === null) throw invalid('audio file is required')
  if (typeof audio === 'string') throw invalid('audio must be an uploaded file, not a text field')
  const job = await ctx.transcriber.submit({
    tenantId: tenant.id,
    audio,
    languages: text(form.get('languages')),
    diarize: text(form.get('diarize')),
    format: text(form.get('format')),
  })
  return json(serializeJob(job))
}

/** GET /v1/transcription/jobs/{id} — the bare job object. */
export const getTranscriptionJob: ApiHandler = (ctx, { params, tenant }) => {
  const job = ctx.state.job(tenant.id, params.id!)
  if (!job) throw notFound('transcription job not found')
  return json(serializeJob(job))
}
