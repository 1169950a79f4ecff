import { Writable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { LOG_LINE_MAX_BYTES } from '../../src/utils/log-line-bound.ts'
import { createLogger } from '../../src/utils/logger.ts'

/**
 * Docker's logging drivers and Kubernetes' runtimes split a line over 16 KiB into pieces, and a collector reading one
 * JSON object a line drops or garbles them: no line the logger writes is longer, whatever a caller hands it.
 */
function logger() {
  const raw: string[] = []
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      raw.push(...chunk.toString('utf8').split(/(?<=\n)/))
      done()
    },
  })
  const log = createLogger({ level: 'info', destination: sink })
  const records = () => raw.map((line) => JSON.parse(line) as Record<string, unknown>)
  return { log, raw, records }
}

const call = (i: number) => ({ status: 'queued', phone: `+9198765${String(i).padStart(5, '0')}`, idempotency_key: `cb6e38d7-04bf-58b1-b755-${String(i).padStart(12, '0')}` })

describe('a log line over 16 KiB', () => {
  it('keeps its level, time, message and figures, the first items of its long lists and how many went', () => {
    const { log, raw, records } = logger()
    log.info({ recipe: 'no-answer-followup', summary: { planned: 500, queued: 500, calls: Array.from({ length: 500 }, (_, i) => call(i)) } }, 'recipe run succeeded')
    expect(raw).toHaveLength(1)
    expect(Buffer.byteLength(raw[0]!)).toBeLessThanOrEqual(LOG_LINE_MAX_BYTES)
    expect(raw[0]!.endsWith('}\n')).toBe(true)
    const [line] = records() as Array<{ level: number; time: number; msg: string; recipe: string; summary: { planned: number; calls: unknown[]; calls_omitted: number }; log_line_cut: string }>
    expect(line).toMatchObject({ level: 30, msg: 'recipe run succeeded', recipe: 'no-answer-followup', summary: { planned: 500, queued: 500 } })
    expect(typeof line!.time).toBe('number')
    expect(line!.summary.calls[0]).toEqual(call(0))
    expect(line!.summary.calls.length + line!.summary.calls_omitted).toBe(500)
    expect(line!.log_line_cut).toMatch(/^this line was \d+ bytes, over the 16384 a log line is kept to/)
  })

  it('counts bytes, not characters: a text of three-byte characters is cut to fit', () => {
    const { log, raw, records } = logger()
    log.warn({ reply: '€'.repeat(10_000) }, 'upstream answered 502') // 10,000 characters, 30,000 bytes
    expect(Buffer.byteLength(raw[0]!)).toBeLessThanOrEqual(LOG_LINE_MAX_BYTES)
    const [line] = records() as Array<{ reply: string; log_line_cut: string }>
    expect(line!.reply).toMatch(/^€+… \(\d+ more characters\)$/)
    expect(line!.log_line_cut).toMatch(/^this line was 300\d\d bytes/)
  })

  it('cuts an error\'s long message and stack, and a message of its own', () => {
    const { log, raw, records } = logger()
    log.error({ err: new Error(`CRM answered 500: ${'x'.repeat(100_000)}`) }, `sync failed: ${'y'.repeat(50_000)}`)
    expect(Buffer.byteLength(raw[0]!)).toBeLessThanOrEqual(LOG_LINE_MAX_BYTES)
    const [line] = records() as Array<{ level: number; msg: string; err: { type: string; message: string } }>
    expect(line).toMatchObject({ level: 50, err: { type: 'Error' } })
    expect(line!.msg).toMatch(/^sync failed: y+… \(\d+ more characters\)$/)
    expect(line!.err.message).toMatch(/^CRM answered 500: x+… \(\d+ more characters\)$/)
  })

  it('with too many fields to cut, keeps its level, time and message', () => {
    const { log, raw, records } = logger()
    const wide: Record<string, number> = {}
    for (let i = 0; i < 3_000; i++) wide[`count_${i}`] = i
    log.info(wide, 'figures')
    expect(Buffer.byteLength(raw[0]!)).toBeLessThanOrEqual(LOG_LINE_MAX_BYTES)
    expect(records()[0]).toEqual({ level: 30, time: expect.any(Number), msg: 'figures', log_line_cut: expect.stringMatching(/^this line was \d+ bytes/) })
  })

  it('leaves a line within the bound as it is, from a child logger too', () => {
    const { log, raw } = logger()
    const calls = Array.from({ length: 40 }, (_, i) => call(i))
    log.child({ recipe: 'r' }).info({ calls }, 'recipe run succeeded')
    expect(raw).toHaveLength(1)
    expect(JSON.parse(raw[0]!)).toEqual({ level: 30, time: expect.any(Number), recipe: 'r', calls, msg: 'recipe run succeeded' })
    const { log: other, records } = logger()
    other.child({ recipe: 'r' }).info({ calls: Array.from({ length: 1_000 }, (_, i) => call(i)) }, 'recipe run succeeded')
    expect(records()[0]).toMatchObject({ recipe: 'r', calls_omitted: expect.any(Number), log_line_cut: expect.any(String) })
  })
})
