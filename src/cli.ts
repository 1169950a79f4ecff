import { parseArgs } from 'node:util'
import { ConfigError, ensureSandboxSecret, makeDatabaseDataDir } from './config/load.ts'
import { resolveConfig } from './config/file.ts'
import { explainOpenError } from './db/open-error.ts'
import { refuseMissingDatabase } from './cli-stored-data.ts'
import pino from 'pino'
import type { Runtime, RuntimeOverrides } from './runtime.ts'
import { createLogger } from './utils/logger.ts'
import { humanLogDestination } from './utils/human-log.ts'
import { ROLES, type Role } from './roles.ts'
import { waitForStopSignal } from './utils/stop-signal.ts'
import { logUnhandledRejections } from './utils/unhandled-rejections.ts'
import { CliError, defineCommand, JSON_OPTION, formatTable, parseArgsOptions, type CliCommand, type CliContext } from './cli-kit.ts'
import { commandHelp, commandList, groupList } from './cli-help.ts'
import { whenReaderGone, writerTo } from './cli-output.ts'
import { helpWidth, wrapText } from './utils/wrap-text.ts'
import { cliName } from './utils/cli-name.ts'
import { didYouMean } from './utils/did-you-mean.ts'
import { printable } from './utils/printable.ts'
import { catchStrayRecipeErrors, startCliWatchdog, type CliWatchdog, type CliWatchdogOptions } from './recipes/cli-watchdog.ts'
import { setLoadWatch } from './recipes/load-watch.ts'
import { LOAD_HELD_MS } from './recipes/loader.ts'
import { terminalJson } from './utils/terminal-json.ts'
import { unreadableFileProblem } from './utils/unreadable-file.ts'

/** How long a stop signal received while `serve` starts waits for start-up to finish (then a graceful stop). */
const START_STOP_WAIT_MS = 5_000

const serveCommand = defineCommand({
  name: 'serve',
  usage: '[--role receiver|worker|all]',
  summary: 'run the service (webhook receiver, /v1 proxy, recipes; the sandbox too when no VOICE_API_KEY is set)',
  options: {
    role: {
      type: 'string',
      value: 'ROLE',
      help: 'all (default): everything, processing in a thread of its own; receiver: webhooks, the /v1 proxy, the dashboard; worker: processing, recipes, queued calls and forwarding. On Postgres each role scales on its own; on SQLite run one all, or one receiver and one worker on the same machine (README → Operations).',
    },
  },
  examples: ['serve', 'serve --role receiver'],
  async run(ctx) {
    const role = (ctx.values.role as string | undefined) ?? 'all'
    if (!ROLES.includes(role as Role)) throw new CliError(`--role must be one of ${ROLES.join(', ')} (got "${role}")`, 2)
    const signal = waitForStopSignal()
    try {
      // A stop while starting: the listener may already be answering (it opens before processing starts), so a
      // start-up that finishes soon is shut down gracefully like any other; one that does not (processing waiting
      // out a database that is down) ends the process after START_STOP_WAIT_MS — a process manager's SIGTERM must
      // not wait for it. Nothing is lost: what the listener answered 2xx is committed, and the rest is sent again.
      const { startServer } = await import('./server.ts')
      const starting = startServer({ env: ctx.env, banner: role !== 'worker', role: role as Role, processing: 'thread' })
      // Armed by any stop signal, the one after start-up included: cleared once the process is done with it, so a
      // clean shutdown does not wait it out (it kept every `serve` alive ~1 s past "switchboard stopped").
      let startStopTimer: NodeJS.Timeout | undefined
      const stoppedEarly = signal.stopped.then(async (stopped) => {
        await new Promise((resolve) => (startStopTimer = setTimeout(resolve, START_STOP_WAIT_MS)))
        return stopped
      })
      const first = await Promise.race([starting.then((server) => ({ server })), stoppedEarly.then((stopped) => ({ stopped }))])
      if ('stopped' in first) {
        process.stdout.write(`\n${first.stopped} while starting: start-up did not finish within ${START_STOP_WAIT_MS / 1000} s; stopped\n`)
        process.exit(0)
      }
      const server = first.server
      const stopLoggingRejections = logUnhandledRejections(server.rt)
      const received = await signal.stopped
      clearTimeout(startStopTimer)
      process.stdout.write(`\n${received}: shutting down…\n`)
      // In the log too, as the ready line is: which signal, and when — a process manager's kill during a long stop (a
      // recipe run waited for) shows as this line with no `switchboard stopped` after it.
      server.rt.log.info({ signal: received }, 'switchboard stopping')
      const stopStarted = performance.now()
      // Still logged while stopping: a run in flight (waited for below) can leave a rejection behind too.
      try {
        await server.close()
      } finally {
        stopLoggingRejections()
      }
      // The log's lines are written asynchronously (the plain line may come out before this one); the process
      // exits once the write is done.
      server.rt.log.info({ signal: received, stop_ms: Math.round(performance.now() - stopStarted) }, 'switchboard stopped')
      process.stdout.write('switchboard stopped\n')
    } finally {
      signal.release()
    }
  },
})

const migrateCommand = defineCommand({
  name: 'migrate',
  summary: 'apply database migrations and exit (--copy-from: fill a new Postgres database from a SQLite one)',
  usage: '[--copy-from <sqlite file>] [--json]',
  options: {
    'copy-from': {
      type: 'string',
      value: 'FILE',
      help: 'then copy every row of this SQLite database (a file, or sqlite:<file>; migrated first) into DATABASE_URL, a Postgres database that must be empty — moving a deployment to Postgres (README → Running on Postgres)',
    },
    json: JSON_OPTION,
  },
  examples: ['migrate', 'migrate --copy-from data/switchboard.db'],
  async run(ctx) {
    const config = await resolveConfig({ env: ctx.env })
    const { migrate, openStore, parseDatabaseUrl } = await import('./db/connect.ts')
    const copyFrom = typeof ctx.values['copy-from'] === 'string' ? ctx.values['copy-from'] : undefined
    if (copyFrom !== undefined && !config.databaseUrl.startsWith('postgres')) {
      throw new CliError('--copy-from fills a Postgres database from a SQLite one: set DATABASE_URL to the (empty) Postgres database first')
    }
    // Another user's database (0600, or in their 0700 folder): said as the option's mistake before the target is reached,
    // where it was said as a database that would not open (exit 1), its folder "not writable".
    const unreadable = copyFrom === undefined ? undefined : unreadableFileProblem(parseDatabaseUrl(copyFrom.startsWith('sqlite:') ? copyFrom : `sqlite:${copyFrom}`).location)
    if (unreadable) throw new CliError(`--copy-from: ${unreadable}`)
    // As every other command says it: a DATA_DIR this user may not create, or which database and what to check (the
    // URL's password hidden).
    makeDatabaseDataDir(config)
    const store = await openStore(config.databaseUrl).catch((error: unknown) => {
      throw explainOpenError(error, config.databaseUrl)
    })
    try {
      const { applied } = await migrate(store).catch((error: unknown) => {
        throw explainOpenError(error, config.databaseUrl)
      })
      if (copyFrom === undefined) {
        if (ctx.values.json) ctx.json({ applied, database: store.dialect })
        else ctx.write(applied.length ? `applied ${applied.join(', ')}\n` : 'database is up to date\n')
        return
      }
      const { copySqliteIntoPostgres, CopyTargetNotEmptyError } = await import('./db/copy-from-sqlite.ts')
      const { existsSync, statSync } = await import('node:fs')
      const sourceUrl = copyFrom.startsWith('sqlite:') ? copyFrom : `sqlite:${copyFrom}`
      const path = parseDatabaseUrl(sourceUrl).location
      if (!existsSync(path) || !statSync(path).isFile()) throw new CliError(`no SQLite database at ${printable(path)}: give the file the service used (DATA_DIR/switchboard.db)`)
      const source = await openStore(sourceUrl).catch((error: unknown) => {
        throw explainOpenError(error, sourceUrl)
      })
      try {
        const migratedSource = await migrate(source)
        // A service still writing the file: what it stores while the copy runs (and after) would be left behind in it —
        // the README says to stop it first, and nothing checked. Its registration says so on this machine.
        const { isProcessAlive, pidOf } = await import('./utils/process-identity.ts')
        const running = (await source.db.selectFrom('instances').select(['process', 'started_at']).execute()).filter((r) => isProcessAlive(r.process) === true)
        if (running.length > 0) {
          const [first] = running
          throw new CliError(`${printable(path)} is in use: a switchboard started ${new Date(Number(first!.started_at)).toISOString()} (pid ${pidOf(first!.process)}) still runs on it, and what it stores during and after the copy would be left behind. Stop it, then run this again`)
        }
        if (!ctx.values.json) ctx.write(`${applied.length ? `applied ${applied.join(', ')}` : 'database is up to date'}; copying ${printable(path)} into it${migratedSource.applied.length ? ` (migrated first: ${migratedSource.applied.join(', ')})` : ''}…\n`)
        const started = Date.now()
        const copies = await copySqliteIntoPostgres(source, store, (copy) => {
          if (!ctx.values.json && copy.rows > 0) ctx.write(`  ${copy.table.padEnd(28)} ${copy.rows.toLocaleString('en-US')} rows\n`)
        }).catch((error: unknown) => {
          if (error instanceof CopyTargetNotEmptyError) throw new CliError(error.message)
          throw error
        })
        const rows = copies.reduce((n, c) => n + c.rows, 0)
        if (ctx.values.json) ctx.json({ applied, database: store.dialect, copied: Object.fromEntries(copies.map((c) => [c.table, c.rows])), rows })
        else ctx.write(`copied ${rows.toLocaleString('en-US')} rows from ${copies.length} tables in ${((Date.now() - started) / 1000).toFixed(1)} s; start the service with this DATABASE_URL, and keep the SQLite file as a backup until you no longer need it\n`)
      } finally {
        await source.close()
      }
    } finally {
      await store.close()
    }
  },
})

/**
 * Every command, by the module that defines it; features add theirs here. A command's module is imported when the
 * command runs, not at every start: importing them all loaded the whole service (3.7 MB of code — the server, the
 * recipe engine, the doctor's checks) for `events list`, ~150 ms of every command's start. `words` are the first words
 * of the module's commands; a test checks them against the commands each module defines.
 */
export const COMMAND_MODULES: ReadonlyArray<{ words: readonly string[]; load: () => Promise<CliCommand[]> }> = [
  { words: ['serve'], load: async () => [serveCommand] },
  { words: ['sandbox'], load: async () => [(await import('./sandbox/commands.ts')).sandboxCommand] },
  { words: ['migrate'], load: async () => [migrateCommand] },
  { words: ['report', 'mail'], load: async () => { const m = await import('./reports/cli.ts'); return [m.reportSendCommand, m.mailListCommand] } },
  { words: ['events', 'reconcile'], load: async () => (await import('./webhooks/commands.ts')).webhookCommands },
  { words: ['calls'], load: async () => (await import('./calls/commands.ts')).callsCommands },
  { words: ['recipes'], load: async () => (await import('./recipes/cli.ts')).recipeCommands },
  { words: ['destinations'], load: async () => (await import('./destinations/commands.ts')).destinationCommands },
  { words: ['doctor'], load: async () => [(await import('./doctor/command.ts')).doctorCommand] },
]

/** Every command, in the order help lists them (loads every command's module). */
export async function loadCommands(): Promise<CliCommand[]> {
  return (await Promise.all(COMMAND_MODULES.map((m) => m.load()))).flat()
}

/** The commands `argv` can name: those of the module its first word belongs to, or every command for a word no module has. */
async function commandsFor(argv: string[]): Promise<CliCommand[]> {
  const module = COMMAND_MODULES.find((m) => m.words.includes(argv[0] ?? ''))
  return module ? module.load() : loadCommands()
}

function help(name: string, commands: CliCommand[], width: number): string {
  return [
    ...wrapText(`usage: ${name} <command> [options]`, width),
    '',
    ...commandList(commands, width),
    '',
    ...wrapText(`"${name} <command> --help" shows a command's arguments, options and examples. Listings accept --json.`, width),
    ...wrapText('Configuration comes from switchboard.config.ts and the environment, as for the service: give a command the DATA_DIR, PORT and DATABASE_URL the service runs with (see README → Configuration).', width),
    ...wrapText('Exit codes: 0 done, 1 failed, 2 a mistake in the command or the configuration.', width),
    '',
  ].join('\n')
}

/** The commands of a group such as "events" (the first word of "events list", "events show", …). */
function groupOf(commands: CliCommand[], word: string | undefined): CliCommand[] {
  return word ? commands.filter((c) => c.name.split(' ').length > 1 && c.name.split(' ')[0] === word) : []
}

function groupHelp(name: string, group: string, members: CliCommand[], width: number): string {
  return [`usage: ${name} ${group} <command> [options]`, '', ...groupList(members, width), '', ...wrapText(`Run "${name} ${group} <command> --help" for one command's arguments, options and examples.`, width), ''].join('\n')
}

/** The command a mistyped one most likely meant ("evnts list" → "events list", "recipe" → "recipes"), if any is close. */
function guessCommand(commands: CliCommand[], argv: string[]): string | undefined {
  for (const words of [2, 1]) {
    if (argv.length < words) continue
    const typed = argv.slice(0, words).join(' ')
    const names = [...new Set(commands.map((c) => c.name.split(' ').slice(0, words).join(' ')).filter((n) => n.split(' ').length === words))]
    const guess = didYouMean(typed, names)
    if (guess && guess !== typed) return guess
  }
  return undefined
}

function findCommand(commands: CliCommand[], argv: string[]): { command: CliCommand; rest: string[] } | undefined {
  // Longest match first: "events list" before "events".
  const sorted = [...commands].sort((a, b) => b.name.split(' ').length - a.name.split(' ').length)
  for (const command of sorted) {
    const words = command.name.split(' ')
    if (words.every((w, i) => argv[i] === w)) return { command, rest: argv.slice(words.length) }
  }
  return undefined
}

export interface MainOptions {
  env?: Record<string, string | undefined>
  /** Replaces parts of the runtime a command opens (tests inject a clock). */
  overrides?: Pick<RuntimeOverrides, 'clock' | 'random'>
  stdout?: (text: string) => void
  stderr?: (text: string) => void
  /** The terminal's width, for help text (default: stdout's when it is a terminal, else 80). */
  columns?: number
  /**
   * Runs a watchdog beside commands that run recipe code (`runsRecipeCode`), which ends the process on code that never
   * returns: the CLI's executable asks for it (src/bin.mjs); `true` gives the service's limits.
   */
  watchRecipeCode?: boolean | CliWatchdogOptions
}

/**
 * What `parseArgs` lets through but a command never means: words it does not take (`events list dead` listed every
 * status), a single-value option given twice (only the last counted), or given empty (`--type ''` from an unset
 * variable meant "no filter"). Each is a user mistake (exit 2).
 */
function checkArguments(command: CliCommand, tokens: ReturnType<typeof parseArgs>['tokens'], positionals: string[], cli: string): void {
  const takes = command.args ?? []
  if (positionals.length > takes.length) {
    const what = takes.length ? `takes ${takes.map(([arg]) => arg).join(' ')}` : 'takes no arguments'
    throw new CliError(`unexpected argument "${positionals[takes.length]}": "${command.name}" ${what}. Run "${cli} ${command.name} --help".`)
  }
  const seen = new Map<string, string>()
  for (const token of tokens ?? []) {
    if (token.kind !== 'option') continue
    const option = command.options?.[token.name]
    if (!option || option.type !== 'string') continue
    const value = token.value ?? ''
    if (value.trim() === '' && !option.checksEmpty) throw new CliError(`--${token.name} is empty (is the variable you passed set?); leave it out for the default`)
    if (option.multiple) continue
    const earlier = seen.get(token.name)
    if (earlier !== undefined) throw new CliError(`--${token.name} given twice ("${earlier}", then "${value}"): give it once`)
    seen.set(token.name, value)
  }
}

/** Runs one CLI command; returns the exit code. */
export async function main(argv: string[], options: MainOptions = {}): Promise<number> {
  const env = options.env ?? process.env
  const out = options.stdout ?? writerTo(process.stdout)
  const err = options.stderr ?? writerTo(process.stderr)
  const name = cliName(env)
  const width = helpWidth(options.columns ?? (process.stdout.isTTY ? process.stdout.columns : undefined))
  // `help events`, `help recipes run`: that command's help, as `events --help` gives it (an unknown one is the mistake
  // it is, exit 2). The topic was ignored: every one printed the whole list, exit 0.
  if (argv[0] === 'help' && argv.length > 1) return main([...argv.slice(1), '--help'], options)
  if (argv.length === 0 || argv[0] === 'help' || argv[0] === '--help' || argv[0] === '-h') {
    out(help(name, await loadCommands(), width))
    return argv.length === 0 ? 2 : 0
  }
  const known = await commandsFor(argv)
  const found = findCommand(known, argv)
  if (!found) {
    const members = groupOf(known, argv[0])
    const asksHelp = argv.length === 2 && ['--help', '-h', 'help'].includes(argv[1]!)
    if (members.length > 0 && (argv.length === 1 || asksHelp)) {
      // "events" or "events --help": the group's commands (a bare group is an incomplete command: exit 2).
      out(groupHelp(name, argv[0]!, members, width))
      return asksHelp ? 0 : 2
    }
    // Among the group's commands ("events lsit"), or among every command for a word no module has ("evnts list").
    const guess = guessCommand(known, argv)
    const meant = guess ? ` (did you mean "${guess}"?)` : ''
    if (members.length > 0) {
      err(`error: unknown command "${argv.join(' ')}"${meant}. ${argv[0]} commands: ${members.map((c) => c.name.split(' ').slice(1).join(' ')).join(', ')}.\n`)
      return 2
    }
    err(`error: unknown command "${argv.join(' ')}"${meant}. Run "${name} help" for the list.\n`)
    return 2
  }
  const { command, rest } = found
  let runtime: Runtime | undefined
  let watchdog: CliWatchdog | undefined
  try {
    const parsed = parseArgs({ args: rest, options: parseArgsOptions(command), allowPositionals: true, strict: true, tokens: true })
    if (parsed.values.help) {
      out(commandHelp(name, command, width))
      return 0
    }
    checkArguments(command, parsed.tokens, parsed.positionals, name)
    if (command.runsRecipeCode && options.watchRecipeCode) {
      // The service's limits (src/processing-host.ts): its processing thread's watchdog, for the configured recipe time limit once read.
      const { MOST_UNRESPONSIVE_MS } = await import('./processing-host.ts')
      watchdog = startCliWatchdog(options.watchRecipeCode === true ? { loadingMs: LOAD_HELD_MS, runningMs: MOST_UNRESPONSIVE_MS } : options.watchRecipeCode)
      // A recipe file's top-level code that leaves a throwing timer: one line and exit 1, not Node's crash. Its place is
      // said within RECIPES_DIR as the environment gives it, until the command's configuration (a config file's) is read.
      catchStrayRecipeErrors({ dirs: [env.RECIPES_DIR || './recipes'], debug: Boolean(env.DEBUG), failCommand: true })
    }
    const ctx: CliContext = {
      values: parsed.values,
      positionals: parsed.positionals,
      env,
      async runtime() {
        if (!runtime) {
          const resolved = await resolveConfig({ env })
          if (command.readsStoredData) await refuseMissingDatabase(resolved.databaseUrl, name)
          const config = ensureSandboxSecret(resolved)
          const { createRuntime } = await import('./runtime.ts')
          // Logs go to stderr so a command's stdout (tables, --json) stays clean: JSON lines with --json, as the service
          // logs; without it a person reads them, so each is one readable line (`info: mail written to the outbox (…)`).
          const destination = parsed.values.json ? pino.destination({ dest: 2, sync: true }) : humanLogDestination(err)
          runtime = await createRuntime(config, { ...options.overrides, log: createLogger({ level: config.logLevel, destination }) })
          if (watchdog) {
            setLoadWatch(runtime, watchdog.watch)
            catchStrayRecipeErrors({ dirs: [config.recipes.dir], debug: Boolean(env.DEBUG), failCommand: true })
          }
          await ctx.limitRecipeRuns(config.pipeline.recipeTimeoutMs)
        }
        return runtime
      },
      async limitRecipeRuns(recipeTimeoutMs) {
        // The service's limits only: a caller of main() that set its own keeps them.
        if (watchdog && options.watchRecipeCode === true) watchdog.limitRuns((await import('./processing-host.ts')).unresponsiveAfterMs(recipeTimeoutMs))
      },
      write: out,
      writeErr: err,
      // Known for the process's own stdout only; a caller of main() that passes its own writer never sees it go.
      readerGone: options.stdout ? new Promise<void>(() => {}) : whenReaderGone(process.stdout),
      // The same JSON, with the C1 controls and line separators a webhook or CSV may carry written as escapes (a terminal
      // reading `--json` acts on U+009B as it does on ESC, which JSON.stringify escapes).
      json: (value) => out(terminalJson(value, 2) + '\n'),
      table: (rows, columns) => out(formatTable(rows, columns)),
    }
    const code = await command.run(ctx)
    return typeof code === 'number' ? code : 0
  } catch (error) {
    if (error instanceof CliError || error instanceof ConfigError) {
      err(`error: ${error.message}\n`)
      return error instanceof CliError ? error.exitCode : 2
    }
    const code = (error as { code?: string }).code
    const unknownOption = code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? /Unknown option '([^']+)'/.exec((error as Error).message)?.[1] : undefined
    if (unknownOption) {
      // Node's own message tells how to pass a positional that starts with a dash, which is rarely what happened.
      const guess = didYouMean(unknownOption.replace(/^-+/, ''), Object.keys(command.options ?? {}))
      err(`error: unknown option ${unknownOption} for "${command.name}"${guess ? ` (did you mean --${guess}?)` : ''}. Run "${name} ${command.name} --help".\n`)
      return 2
    }
    // A value that starts with a dash (`--limit -1`): Node's three lines, said in one.
    const dashed = code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' ? /^Option '([^']+)' argument is ambiguous/.exec((error as Error).message)?.[1] : undefined
    if (dashed) {
      err(`error: ${dashed} takes a value, and the next word starts with a dash: write ${dashed}=<value> for a value that starts with one. Run "${name} ${command.name} --help".\n`)
      return 2
    }
    // A flag given no value, or a value it does not take: said as every other flag mistake is.
    const message = (error as Error).message ?? ''
    const missing = code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' ? /^Option '--([\w-]+)(?: <value>)?' argument missing/.exec(message)?.[1] : undefined
    if (missing) {
      const value = command.options?.[missing]?.value ?? 'VALUE'
      err(`error: --${missing} needs a value (--${missing} ${value}). Run "${name} ${command.name} --help".\n`)
      return 2
    }
    const noValue = code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' ? /^Option '--([\w-]+)' does not take an argument/.exec(message)?.[1] : undefined
    if (noValue) {
      err(`error: --${noValue} takes no value: write --${noValue} alone. Run "${name} ${command.name} --help".\n`)
      return 2
    }
    if (error instanceof TypeError && code?.startsWith('ERR_PARSE_ARGS')) {
      // Node's messages sometimes end with a full stop of their own, sometimes not; one line, whatever they hold.
      err(`error: ${error.message.replace(/\s*\n\s*/g, ' ').replace(/\.+$/, '')}. Run "${name} ${command.name} --help".\n`)
      return 2
    }
    err(`error: ${(error as Error).message ?? String(error)}\n`)
    if (env.DEBUG) err(`${(error as Error).stack}\n`)
    return 1
  } finally {
    await runtime?.close()
    await watchdog?.stop()
  }
}
