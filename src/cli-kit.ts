import type { ParseArgsConfig } from 'node:util'
import type { Runtime } from './runtime.ts'

/** A user mistake: printed as one line, exit code 2, no stack trace. */
export class CliError extends Error {
  override readonly name = 'CliError'
  constructor(
    message: string,
    readonly exitCode = 2,
  ) {
    super(message)
  }
}

export interface CliContext {
  /** Parsed flags. */
  values: Record<string, string | boolean | string[] | boolean[] | undefined>
  /** Arguments after the command words. */
  positionals: string[]
  /** Opens (once) the configured runtime: config, migrated database. Closed after the command. */
  runtime(): Promise<Runtime>
  env: Record<string, string | undefined>
  write(text: string): void
  /** Prints `value` as JSON (for --json). */
  json(value: unknown): void
  /** Prints rows as an aligned table. */
  table(rows: Array<Record<string, unknown>>, columns?: string[]): void
}

export interface CliCommand {
  /** Command words, e.g. "events list". */
  name: string
  summary: string
  /** Shown in help after the name, e.g. "<id> [--json]". */
  usage?: string
  options?: NonNullable<ParseArgsConfig['options']>
  run(ctx: CliContext): Promise<number | void>
}

export function defineCommand(command: CliCommand): CliCommand {
  return command
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return ''
  if (typeof value === 'object') return JSON.stringify(value)
  return String(value)
}

export function formatTable(rows: Array<Record<string, unknown>>, columns?: string[]): string {
  if (rows.length === 0) return '(none)\n'
  const cols = columns ?? Object.keys(rows[0]!)
  const cells = rows.map((r) => cols.map((c) => cell(r[c]).replace(/\s+/g, ' ')))
  const widths = cols.map((c, i) => Math.min(60, Math.max(c.length, ...cells.map((r) => r[i]!.length))))
  const line = (values: string[]) =>
    values.map((v, i) => (v.length > widths[i]! ? v.slice(0, widths[i]! - 1) + '…' : v.padEnd(widths[i]!))).join('  ').trimEnd()
  return [line(cols), line(widths.map((w) => '─'.repeat(w))), ...cells.map(line)].join('\n') + '\n'
}

/** Reads an integer flag or throws a CliError naming it. */
export function intFlag(values: CliContext['values'], name: string, fallback?: number): number | undefined {
  const raw = values[name]
  if (raw === undefined) return fallback
  const n = Number(raw)
  if (typeof raw !== 'string' || !Number.isInteger(n)) throw new CliError(`--${name} must be a whole number (got "${String(raw)}")`)
  return n
}
