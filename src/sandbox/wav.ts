import { createHash } from 'node:crypto'

const SAMPLE_RATE = 8000

/** A stable 32-bit seed from any text (the conversation id), so a recording never changes. */
function seedOf(text: string): number {
  return createHash('sha256').update(text).digest().readUInt32LE(0)
}

/**
 * A real, playable WAV (RIFF, PCM 16-bit mono 8 kHz — telephone audio): a two-tone "voice" that
 * alternates speakers, with a little noise. Deterministic for a given seed and length.
 */
export function generateWav(seed: string, seconds: number): Uint8Array<ArrayBuffer> {
  const samples = Math.max(1, Math.round(SAMPLE_RATE * seconds))
  const dataBytes = samples * 2
  const buf = Buffer.alloc(44 + dataBytes)
  buf.write('RIFF', 0, 'ascii')
  buf.writeUInt32LE(36 + dataBytes, 4)
  buf.write('WAVE', 8, 'ascii')
  buf.write('fmt ', 12, 'ascii')
  buf.writeUInt32LE(16, 16) // fmt chunk size
  buf.writeUInt16LE(1, 20) // PCM
  buf.writeUInt16LE(1, 22) // mono
  buf.writeUInt32LE(SAMPLE_RATE, 24)
  buf.writeUInt32LE(SAMPLE_RATE * 2, 28) // byte rate
  buf.writeUInt16LE(2, 32) // block align
  buf.writeUInt16LE(16, 34) // bits per sample
  buf.write('data', 36, 'ascii')
  buf.writeUInt32LE(dataBytes, 40)
  let state = seedOf(seed) || 1
  const noise = () => {
    // xorshift32: cheap and deterministic
    state ^= state << 13
    state ^= state >>> 17
    state ^= state << 5
    return ((state >>> 0) / 4294967296) * 2 - 1
  }
  const agentHz = 180 + (state % 60)
  const humanHz = 240 + ((state >>> 8) % 80)
  for (let i = 0; i < samples; i++) {
    const t = i / SAMPLE_RATE
    const turn = Math.floor(t / 1.2) % 2 // speakers alternate every 1.2 s
    const hz = turn === 0 ? agentHz : humanHz
    const envelope = Math.sin(Math.PI * ((t % 1.2) / 1.2)) // each turn fades in and out
    const value = 0.35 * envelope * Math.sin(2 * Math.PI * hz * t) + 0.03 * noise()
    buf.writeInt16LE(Math.round(Math.max(-1, Math.min(1, value)) * 32767), 44 + i * 2)
  }
  return new Uint8Array(buf.buffer as ArrayBuffer, buf.byteOffset, buf.byteLength)
}

/** The length in seconds of a PCM WAV, or undefined when the bytes are not one. */
export function wavDurationSeconds(bytes: Uint8Array): number | undefined {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (buf.length < 44 || buf.toString('ascii', 0, 4) !== 'RIFF' || buf.toString('ascii', 8, 12) !== 'WAVE') return undefined
  let byteRate = 0
  for (let off = 12; off + 8 <= buf.length; ) {
    const id = buf.toString('ascii', off, off + 4)
    const size = buf.readUInt32LE(off + 4)
    if (id === 'fmt ' && off + 16 <= buf.length) byteRate = buf.readUInt32LE(off + 16)
    if (id === 'data') return byteRate > 0 ? Math.min(size, buf.length - off - 8) / byteRate : undefined
    off += 8 + size + (size % 2)
  }
  return undefined
}

/** Parses a single-range `Range` header against a length: the inclusive byte span, 'invalid', or undefined (no header). */
export function parseRange(header: string | null, length: number): { start: number; end: number } | 'unsatisfiable' | undefined {
  if (!header) return undefined
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  // Multiple ranges or other units: serving the whole file is allowed (RFC 9110 §14.2).
  if (!match || (match[1] === '' && match[2] === '')) return undefined
  let start: number
  let end: number
  if (match[1] === '') {
    const suffix = Number(match[2])
    if (suffix === 0) return 'unsatisfiable'
    start = Math.max(0, length - suffix)
    end = length - 1
  } else {
    start = Number(match[1])
    end = match[2] === '' ? length - 1 : Math.min(Number(match[2]), length - 1)
    if (match[2] !== '' && Number(match[2]) < start) return undefined
  }
  if (start >= length) return 'unsatisfiable'
  return { start, end }
}
