import { Writable } from 'node:stream'
import { createLogger, type Logger } from '../../src/utils/logger.ts'

/** A real JSON logger whose lines a test can read back. */
export function captureLogs(level = 'info'): { log: Logger; lines: Array<Record<string, unknown>>; find(msg: RegExp): Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = []
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>)
      done()
    },
  })
  const log = createLogger({ level, destination: sink })
  return { log, lines, find: (msg) => lines.filter((l) => typeof l.msg === 'string' && msg.test(l.msg)) }
}
