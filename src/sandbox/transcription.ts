import { createHash } from 'node:crypto'
import { TRANSCRIPTION_LANGUAGES, type TranscriptionJob } from '../upstream/schemas.ts'
import type { Clock } from '../utils/clock.ts'
import { invalid } from './errors.ts'
import type { Ids } from './ids.ts'
import type { SandboxState, TranscriptionJobRecord } from './state.ts'
import type { Timers } from './timers.ts'
import { wavDurationSeconds } from './wav.ts'

/** Not shown in the spec: the sandbox's upload ceiling for audio. */
export const MAX_AUDIO_BYTES = 25 * 1024 * 1024
/** Simulated seconds a job takes: a fixed part plus half the audio's length. */
export const TRANSCRIPTION_BASE_SECONDS = 5

const LINES: Record<string, string[]> = {
  standard: [
    'Hello, I am calling about your recent order.',
    'Yes, I received it yesterday, thank you.',
    'Is there anything else I can help you with today?',
    'No, that is all. Have a good day.',
  ],
  code_mixed: [
    'Hello, main aapke recent order ke baare mein call kar raha hoon.',
    'Haan, mujhe kal mil gaya, thank you.',
    'Kya main aur kisi cheez mein help kar sakta hoon?',
    'Nahi, bas itna hi. Have a good day.',
  ],
}

export interface TranscriptionInput {
  tenantId: string
  audio: File
  languages: string | null
  diarize: string | null
  format: string | null
}

/** Validates an upload's fields (400 with a clear message) and returns the parsed options. */
function validate(input: TranscriptionInput) {
  if (input.audio.size === 0) throw invalid('audio file is empty')
  if (input.audio.size > MAX_AUDIO_BYTES) throw invalid(`audio file is larger than ${MAX_AUDIO_BYTES / 1024 / 1024} MB`)
  const languages = (input.languages ?? '').split(',').map((l) => l.trim()).filter(Boolean)
  for (const lang of languages) {
    if (!(TRANSCRIPTION_LANGUAGES as readonly string[]).includes(lang)) {
      throw invalid(`languages: unsupported code "${lang}" (use ${TRANSCRIPTION_LANGUAGES.join(', ')})`)
    }
  }
  const diarizeRaw = (input.diarize ?? '').trim().toLowerCase()
  if (!['', 'true', 'false', '1', '0'].includes(diarizeRaw)) throw invalid('diarize must be true or false')
  const format = (input.format ?? '').trim() || 'standard'
  if (format !== 'standard' && format !== 'code_mixed') throw invalid('format must be standard or code_mixed')
  return { languages, diarize: diarizeRaw === 'true' || diarizeRaw === '1', format }
}

export function serializeJob(job: TranscriptionJobRecord): TranscriptionJob {
  const out: TranscriptionJob = { id: job.id, engine: job.engine, status: job.status }
  if (job.status === 'completed') {
    out.text = job.text
    out.language = job.language
    out.utterances = job.utterances
  }
  return out
}

/** Transcription jobs: pending, then completed after a simulated processing time, deterministically. */
export function createTranscriber(options: { clock: Clock; speed: number; state: SandboxState; ids: Ids; timers: Timers }) {
  return {
    async submit(input: TranscriptionInput): Promise<TranscriptionJobRecord> {
      const opts = validate(input)
      const bytes = new Uint8Array(await input.audio.arrayBuffer())
      // Non-WAV audio: assume 16 kB/s (128 kbit/s) to give the utterances a plausible length.
      const seconds = wavDurationSeconds(bytes) ?? Math.max(1, bytes.byteLength / 16_000)
      const digest = createHash('sha256').update(bytes).digest()
      const job: TranscriptionJobRecord = {
        id: options.ids.jobId(),
        tenantId: input.tenantId,
        engine: opts.format === 'code_mixed' ? 'formant-stt-codemixed-v1' : 'formant-stt-v1',
        status: 'pending',
        createdAt: options.clock.now(),
      }
      options.state.addJob(job)
      const lines = LINES[opts.format]!
      // 2–4 utterances, fewer for very short audio: each keeps at least half a second.
      const count = Math.max(1, Math.min(2 + (digest[0]! % 3), Math.floor(seconds / 0.5)))
      const slice = seconds / count
      // A short gap at each end of a slice when there is room for it; start ≤ end ≤ the audio's length always.
      const gap = Math.min(0.2, slice / 4)
      const round = (x: number) => Math.round(x * 100) / 100
      const utterances = Array.from({ length: count }, (_, i) => ({
        speaker: opts.diarize ? `speaker_${i % 2}` : 'speaker_0',
        text: lines[(digest[1]! + i) % lines.length]!,
        start: round(i * slice + gap),
        end: Math.min(round((i + 1) * slice - gap / 2), round(seconds)),
      }))
      const language = opts.languages.find((l) => l !== 'unknown') ?? (opts.format === 'code_mixed' ? 'hi-IN' : 'en-IN')
      const delay = Math.round(((TRANSCRIPTION_BASE_SECONDS + seconds / 2) * 1000) / options.speed)
      options.timers.after(delay, () => {
        job.status = 'completed'
        job.text = utterances.map((u) => u.text).join(' ')
        job.language = language
        job.utterances = utterances
      })
      return job
    },
  }
}
export type Transcriber = ReturnType<typeof createTranscriber>
