import { afterEach, describe, expect, it } from 'vitest'
import { generateWav } from '../../src/sandbox/wav.ts'
import { GLOBEX, harness, type Harness } from './helpers.ts'

let h: Harness
afterEach(async () => h && (await h.sb.close()))

function submit(h: Harness, fields: Record<string, string | Blob>, key?: string) {
  const form = new FormData()
  for (const [k, v] of Object.entries(fields)) {
    if (typeof v === 'string') form.set(k, v)
    else form.set(k, v, 'audio.wav')
  }
  return h.request('/v1/transcription/jobs', { method: 'POST', body: form, ...(key ? { key } : {}) })
}
const wav = (seconds: number) => new Blob([generateWav('t', seconds)], { type: 'audio/wav' })

describe('transcription jobs', () => {
  it('answers a bare pending job, then completes with text, language and utterances timed in seconds', async () => {
    h = harness()
    const res = await submit(h, { audio: wav(6), languages: 'hi-IN,en-IN', diarize: 'true' })
    expect(res.status).toBe(200)
    const job = await h.json(res)
    expect(job).toEqual({ id: expect.stringMatching(/^job_[0-9a-f]+$/), engine: expect.any(String), status: 'pending' })
    const poll = async () => h.json(await h.request(`/v1/transcription/jobs/${job.id}`))
    expect(await poll()).toEqual(job)
    await h.clock.advance(((5 + 3) * 1000) / 60) // 5 s + half of 6 s, divided by speed
    const done = await poll()
    expect(done.status).toBe('completed')
    expect(done.language).toBe('hi-IN')
    expect(done.text.length).toBeGreaterThan(10)
    expect(done.utterances.length).toBeGreaterThanOrEqual(2)
    expect(new Set(done.utterances.map((u: { speaker: string }) => u.speaker)).size).toBe(2)
    for (const u of done.utterances) {
      expect(u.start).toBeLessThan(u.end)
      expect(u.end).toBeLessThanOrEqual(6)
    }
    expect(done.text).toBe(done.utterances.map((u: { text: string }) => u.text).join(' '))
    const hidden = await h.request(`/v1/transcription/jobs/${job.id}`, { key: GLOBEX })
    expect(hidden.status).toBe(404)
    expect(await h.json(hidden)).toEqual({ error: { message: 'transcription job not found', type: 'not_found' } })
  })

  it.each([
    [{ languages: 'en-IN' }, 'audio file is required'],
    [{ audio: 'not a file' }, 'audio must be an uploaded file, not a text field'],
    [{ audio: new Blob([]) }, 'audio file is empty'],
    [{ audio: wav(1), languages: 'en-US' }, /^languages: unsupported code "en-US"/],
    [{ audio: wav(1), diarize: 'maybe' }, 'diarize must be true or false'],
    [{ audio: wav(1), format: 'fancy' }, 'format must be standard or code_mixed'],
  ])('rejects %o with 400', async (fields, message) => {
    h = harness()
    const res = await submit(h, fields as Record<string, string | Blob>)
    expect(res.status).toBe(400)
    const err = (await h.json(res)).error
    expect(err.type).toBe('invalid_request')
    if (typeof message === 'string') expect(err.message).toBe(message)
    else expect(err.message).toMatch(message)
  })

  it('times the utterances of very short audio inside it, each ending after it starts', async () => {
    h = harness()
    for (const audio of [new Blob([new Uint8Array(100).fill(7)]), new Blob([new Uint8Array(104).fill(9)]), wav(0.2)]) {
      const job = await h.json(await submit(h, { audio }))
      await h.clock.advance(60_000)
      const done = await h.json(await h.request(`/v1/transcription/jobs/${job.id}`))
      expect(done.status).toBe('completed')
      const length = Math.max(...done.utterances.map((u: { end: number }) => u.end))
      for (const u of done.utterances as Array<{ start: number; end: number }>) {
        expect(u.start).toBeGreaterThanOrEqual(0)
        expect(u.end).toBeGreaterThanOrEqual(u.start)
      }
      expect(length).toBeLessThanOrEqual(1)
    }
  })

  it('refuses a form larger than the audio limit allows with 400 before reading it whole', async () => {
    h = harness()
    const res = await h.request('/v1/transcription/jobs', {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=x', 'content-length': String(26 * 1024 * 1024) },
      body: new Uint8Array(16),
    })
    expect(res.status).toBe(400)
    // The audio's limit, as the route's own check says it (it was "request body is larger than 25664 KB").
    expect((await h.json(res)).error.message).toBe('audio file is larger than 25 MB')
  })

  it('accepts unknown (auto-detect) and code_mixed', async () => {
    h = harness()
    const job = await h.json(await submit(h, { audio: wav(2), languages: 'unknown', format: 'code_mixed', diarize: 'false' }))
    await h.clock.advance(60_000)
    const done = await h.json(await h.request(`/v1/transcription/jobs/${job.id}`))
    expect(done).toMatchObject({ status: 'completed', language: 'hi-IN' })
    expect(new Set(done.utterances.map((u: { speaker: string }) => u.speaker))).toEqual(new Set(['speaker_0']))
  })
})
