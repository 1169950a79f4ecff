import type { ParseArgsConfig } from 'node:util'
import type { Runtime } from './runtime.ts'
import { printable } from './utils/printable.ts'
import { parseDayOrInstant } from './utils/iso-datetime.ts'

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
  values: Record<string, string | boolean | Array<string | boolean> | undefined>
  /** Arguments after the command words. */
  positionals: string[]
  /** Opens (once) the configured runtime: config, migrated database. Closed after the command. */
  runtime(): Promise<Runtime>
  /**
   * For a command that runs recipe code without a runtime (`recipes test`): the configured recipe time limit, once read,
   * so the watchdog stops a run's synchronous loop after as long as the service's would (`runtime()` does this itself).
   */
  limitRecipeRuns(recipeTimeoutMs: number): Promise<void>
  env: Record<string, string | undefined>
  write(text: string): void
  /** Writes to stderr: what is not the command's output, where stdout carries it as JSON (`--watch --json`). */
  writeErr(text: string): void
  /** Prints `value` as JSON (for --json). */
  json(value: unknown): void
  /** Prints rows as an aligned table. */
  table(rows: Array<Record<string, unknown>>, columns?: string[]): void
  /** Resolves when whoever read stdout has gone (a closed pipe): a command that runs until Ctrl-C ends then. */
  readerGone: Promise<void>
}

/** One option of a command: how it parses, and what `<command> --help` says of it. */
export interface CliOption {
  type: 'string' | 'boolean'
  short?: string
  /** May be given more than once (`--to a --to b`). */
  multiple?: boolean
  /** The command refuses an empty value itself, with a reason of its own (otherwise an empty value is refused for it). */
  checksEmpty?: boolean
  /** The value's name in help, e.g. "SECONDS" (string options). */
  value?: string
  /** What the option does, with its default and range: one or two sentences. */
  help: string
}

export interface CliCommand {
  /** Command words, e.g. "events list". */
  name: string
  summary: string
  /** Shown in help after the name, e.g. "<id> [--json]". */
  usage?: string
  /** The positional arguments, in order, each with what it is: [["<id>", "the event's id, as events list shows it"]]. */
  args?: Array<[string, string]>
  options?: Record<string, CliOption>
  /** Command lines `<command> --help` shows under "examples" (after the CLI's name). */
  examples?: string[]
  run(ctx: CliContext): Promise<number | void>
  /**
   * It loads or runs recipe code in this process (a recipe's top-level code, its `run`): as the CLI, a watchdog ends
   * code that never returns, with one line naming the file and exit 1 (src/recipes/cli-watchdog.ts).
   */
  runsRecipeCode?: boolean
  /**
   * It only reads, or acts on, what the service stored (a listing, a replay): refused with one line and exit 2 — creating
   * nothing — when the configured SQLite database does not exist, which is a DATA_DIR other than the service's (a typo, a
   * relative path from another folder) or a service never started. Opened, it made an empty database and a webhook secret
   * there, and answered "(none)".
   */
  readsStoredData?: boolean
}

export function defineCommand(command: CliCommand): CliCommand {
  return command
}

/** `--json`, as every listing has it. */
export const JSON_OPTION: CliOption = { type: 'boolean', help: 'print the result as JSON instead of text (for scripts and jq)' }

/**
 * `--limit N` of a listing. The maximum is grouped by hand: the first `toLocaleString` of a process loads ICU's number
 * formats, ~25 ms of every CLI command's start (these options are built as the command table loads).
 */
export function limitOption(max: number, fallback = 50): CliOption {
  const grouped = String(max).replace(/\B(?=(\d{3})+$)/g, ',')
  return { type: 'string', value: 'N', help: `show at most N rows, newest first (default ${fallback}, at most ${grouped})` }
}

/** The options as `util.parseArgs` takes them (their help text left out), with `-h, --help` added. */
export function parseArgsOptions(command: CliCommand): NonNullable<ParseArgsConfig['options']> {
  const options: NonNullable<ParseArgsConfig['options']> = {}
  for (const [name, o] of Object.entries(command.options ?? {})) {
    options[name] = { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) }
  }
  options.help = { type: 'boolean', short: 'h' }
  return options
}

/** One table cell on one line: whitespace folded, and what came from outside (a webhook, a sink's answer) unable to steer the terminal. */
function cell(value: unknown): string {
  if (value === null || value === undefined) return ''
  return printable((typeof value === 'object' ? JSON.stringify(value) : String(value)).replace(/\s+/g, ' '), Infinity)
}

/**
 * An id column (`id`, `…_id`, `idempotency_key`): what a user copies into the next command (`events show <id>`,
 * `--conversation <id>`), so never cut and its spaces never folded — a tab or a newline shown escaped, not as a space.
 * Cut at 60 characters or folded, a provider's long id was one `events show` could not find.
 */
const isIdColumn = (name: string) => name === 'id' || name.endsWith('_id') || name === 'idempotency_key'

function idCell(value: unknown): string {
  if (value === null || value === undefined) return ''
  return printable(typeof value === 'object' ? JSON.stringify(value) : String(value), Infinity)
}

export function formatTable(rows: Array<Record<string, unknown>>, columns?: string[]): string {
  if (rows.length === 0) return '(none)\n'
  const cols = columns ?? Object.keys(rows[0]!)
  const whole = cols.map(isIdColumn)
  const cells = rows.map((r) => cols.map((c, i) => (whole[i] ? idCell(r[c]) : cell(r[c]))))
  const widths = cols.map((c, i) => {
    const widest = Math.max(c.length, ...cells.map((r) => r[i]!.length))
    return whole[i] ? widest : Math.min(60, widest)
  })
  const line = (values: string[]) =>
    values.map((v, i) => (v.length > widths[i]! ? v.slice(0, widths[i]! - 1) + '…' : v.padEnd(widths[i]!))).join('  ').trimEnd()
  return [line(cols), line(widths.map((w) => '─'.repeat(w))), ...cells.map(line)].join('\n') + '\n'
}

/** Reads an integer flag or throws a CliError naming it. */
export function intFlag(values: CliContext['values'], name: string, fallback?: number): number | undefined {
  const raw = values[name]
  if (raw === undefined) return fallback
  // Digits, as the configuration reads numbers: not '' (0), '0x1' or '1e0'.
  if (typeof raw !== 'string' || !/^\s*-?\d+\s*$/.test(raw)) throw new CliError(`--${name} must be a whole number (got "${String(raw)}")`)
  return Number(raw)
}

/** Reads a `--since`/`--until` flag: an ISO day (its UTC midnight) or a time with its zone, as epoch ms. */
export function isoFlag(values: CliContext['values'], name: string): number | undefined {
  const raw = values[name]
  if (raw === undefined) return undefined
  const ms = typeof raw === 'string' ? parseDayOrInstant(raw) : undefined
  if (ms === undefined) throw new CliError(`--${name} must be an ISO day (its UTC midnight) or a time with its zone such as 2026-03-01 or 2026-03-01T00:00:00Z (got "${String(raw)}")`)
  return ms
}
