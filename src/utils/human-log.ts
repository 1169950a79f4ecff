import type { DestinationStream } from 'pino'
import { printable } from './printable.ts'
import { terminalJson } from './terminal-json.ts'

/** pino's numeric levels, as a person reads them. */
const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' }
/** Fields of every record that the line says otherwise (its level, its message) or not at all (the time: the line is read as it is written). */
const OMITTED = new Set(['level', 'time', 'msg', 'pid', 'hostname'])
/** The most characters of one value shown: a log line stays a line. */
const VALUE_MAX = 500

function shownValue(value: unknown): string {
  if (typeof value === 'string') return printable(value, VALUE_MAX)
  // An error as pino serialises it: its message (the stack is for the service's log and DEBUG).
  const error = value as { message?: unknown; stack?: unknown } | null
  if (error && typeof error === 'object' && typeof error.message === 'string' && 'stack' in error) return printable(error.message, VALUE_MAX)
  return printable(terminalJson(value), VALUE_MAX)
}

/** One log record (pino's JSON object) as a line for a person: `warn: relay slow (host smtp.example, attempts 2)`. */
export function humanLogLine(record: Record<string, unknown>): string {
  const level = LEVELS[record.level as number] ?? String(record.level)
  const fields = Object.entries(record)
    .filter(([key, value]) => !OMITTED.has(key) && value !== undefined)
    .map(([key, value]) => `${key} ${shownValue(value)}`)
  const msg = typeof record.msg === 'string' ? printable(record.msg, VALUE_MAX) : ''
  return `${level}: ${msg}${fields.length ? ` (${fields.join(', ')})` : ''}\n`
}

/**
 * A pino destination for a CLI command in human mode: each record written through `write` (the command's stderr) as a
 * readable line. The service's log and `--json` keep pino's JSON lines, for machines.
 */
export function humanLogDestination(write: (text: string) => void): DestinationStream {
  return {
    write(line: string) {
      let record: unknown
      try {
        record = JSON.parse(line)
      } catch {
        write(line.endsWith('\n') ? line : `${line}\n`)
        return
      }
      write(record && typeof record === 'object' ? humanLogLine(record as Record<string, unknown>) : line)
    },
  }
}
