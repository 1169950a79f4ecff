import { writeSync } from 'node:fs'
import { Worker } from 'node:worker_threads'
import { printable } from '../utils/printable.ts'
import type { LoadWatch } from './load-watch.ts'
import { recipeFrame } from './recipe-frame.ts'

export interface CliWatchdogOptions {
  /** How long a recipe file may hold the event loop while it loads (its top-level code). */
  loadingMs: number
  /** How long recipe code may hold it otherwise (a run's synchronous loop). */
  runningMs: number
}

export interface CliWatchdog {
  /** Told which recipe file is loading (src/recipes/load-watch.ts): the line it ends the process with names it. */
  watch: LoadWatch
  /** Another limit for recipe code outside loading (the configured recipe time limit, once read). */
  limitRuns(ms: number): void
  stop(): Promise<void>
}

// Plain CommonJS, evaluated in the watchdog's thread. The main thread counts a heartbeat in shared memory; a count
// that stands still past the limit is recipe code holding the event loop — a synchronous loop, which no timer of that
// thread can cut. The watchdog then ends that code through the inspector (Runtime.terminateExecution, delivered as an
// interrupt even inside a loop), lets go of the inspector, and says why: the main thread prints it and exits 1.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const { writeSync } = require('node:fs')
const { basename } = require('node:path')
const beat = workerData.beat
let last = Atomics.load(beat, 0)
let since = Date.now()
let loading
// Until a recipe file starts loading there is no recipe code in the process: a held event loop then is the command's
// own start (its configuration, database, migrations — seconds on a busy machine), not a recipe's loop.
let armed = false
let runningMs = workerData.runningMs
parentPort.on('message', (m) => {
  if ('loading' in m) loading = m.loading
  if (loading !== undefined) armed = true
  if (m.runningMs) runningMs = m.runningMs
})
const look = setInterval(() => {
  const now = Atomics.load(beat, 0)
  if (now !== last || !armed) { last = now; since = Date.now(); return }
  const limit = loading === undefined ? runningMs : workerData.loadingMs
  if (Date.now() - since < limit) return
  clearInterval(look)
  const held = Math.round((Date.now() - since) / 1000)
  const line = loading
    ? 'error: recipe file ' + basename(loading) + ' never finished loading: its top-level code held this command for ' + held + ' s without returning (a synchronous loop?); fix the file and run the command again'
    : 'error: recipe code held this command for ' + held + ' s without returning (a synchronous loop in run?); stopped it'
  const stuck = { line, held, loading: loading !== undefined }
  let Session
  try { Session = require('node:inspector').Session } catch {}
  if (!Session) {
    // A Node built without the inspector: the line, then the process ends the only way left.
    writeSync(2, line + '\\n')
    process.kill(process.pid, 'SIGKILL')
    return
  }
  const session = new Session()
  session.connectToMainThread()
  session.post('Runtime.terminateExecution', () => {
    session.disconnect()
    parentPort.postMessage(stuck)
  })
}, 200)
`

/** The watchdog of this process's command, if one runs: commands that load recipes without a runtime tell it too. */
let current: CliWatchdog | undefined

/** What runs once the watchdog has stopped recipe code, before the process ends: told how long the code held it. */
type BeforeExit = (heldSeconds: number) => Promise<void>
const beforeExit = new Set<BeforeExit>()

/** How long the process waits for what runs before it ends (a database that does not answer must not hold it). */
const BEFORE_EXIT_MS = 2_000

/**
 * Runs `close` if the watchdog stops this command's recipe code, before the process ends: `recipes run` closes the run
 * it had started, which would otherwise read `running` — a dry run, which no other process looks at, for the next hour.
 * A no-op where no watchdog runs. Returns the function that takes it back (the run is over).
 */
export function whenCliWatchdogStops(close: BeforeExit): () => void {
  if (!current) return () => {}
  beforeExit.add(close)
  return () => void beforeExit.delete(close)
}

/** What was asked to run before the process ends, each given at most BEFORE_EXIT_MS together; their failures are not the line's. */
async function runBeforeExit(heldSeconds: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, BEFORE_EXIT_MS)))
  await Promise.race([Promise.allSettled([...beforeExit].map((close) => close(heldSeconds))), bound])
  clearTimeout(timer)
}

/** Told which recipe file loads, when this process's command has a watchdog (`recipes check`, `doctor`). */
export function cliLoadWatch(): LoadWatch | undefined {
  return current?.watch
}

/** How often the main thread says its event loop turns. */
const BEAT_MS = 100

/**
 * For a CLI command that runs recipe code in its own process (`recipes list`, `recipes run`, `doctor`, …): a recipe
 * whose code never returns — a loop at a file's top level, or in `run` — held the command for good, silent, until
 * someone pressed Ctrl-C. The serve's processing thread has its watchdog (src/processing-host.ts); this is the
 * CLI's: it ends such code, prints one line naming the file, and the command exits 1.
 */
export function startCliWatchdog(options: CliWatchdogOptions): CliWatchdog {
  const beat = new Int32Array(new SharedArrayBuffer(4))
  const heartbeat = setInterval(() => Atomics.add(beat, 0, 1), BEAT_MS)
  heartbeat.unref()
  // Plain CommonJS whatever flags the process has (`--input-type=module` would make the eval'd source a module).
  const worker = new Worker(WORKER_SOURCE, { eval: true, execArgv: [], workerData: { beat, loadingMs: options.loadingMs, runningMs: options.runningMs } })
  worker.unref()
  worker.on('message', (stuck: { line: string; held: number; loading: boolean }) => {
    // The code is stopped and the event loop turns again: what the command started is closed first (a run's row), then
    // the line, written at once: the process ends right after.
    void (stuck.loading ? Promise.resolve() : runBeforeExit(stuck.held)).then(() => {
      writeSync(2, `${stuck.line}\n`)
      process.exit(1)
    })
  })
  // A watchdog that fails (it should not) leaves the command as it would be without one.
  worker.on('error', () => {})
  const watchdog: CliWatchdog = {
    watch: {
      loading: (file) => worker.postMessage({ loading: file }),
      loaded: () => worker.postMessage({ loading: undefined }),
      leftOut: () => undefined,
    },
    limitRuns: (ms) => worker.postMessage({ runningMs: ms }),
    async stop() {
      if (current === watchdog) current = undefined
      clearInterval(heartbeat)
      await worker.terminate()
    },
  }
  current = watchdog
  return watchdog
}

interface StrayErrorOptions {
  /** The recipes' folders: an error's place is said within them. */
  dirs: readonly string[]
  /** DEBUG=1: the stack too. */
  debug: boolean
  /** Whether such an error fails the command (exit 1). */
  failCommand: boolean
}

/** This process's handlers, once installed. */
let stray: { options: StrayErrorOptions; errors: StrayErrors } | undefined

/** What recipe code threw where nothing could catch it, seen by the command that ran it (src/recipes/cli.ts, test-command.ts). */
export interface StrayErrors {
  /** Another run starts (`recipes test --watch`): an error from now on waits for its outcome. */
  starts(): void
  /** The run is over and recorded with `status`: an error reported from now on says so. */
  ran(recipe: string, status: string): void
}

/**
 * For a command that loads or runs recipes in its own process (`recipes run`, `recipes test`; `recipes list`, `check`,
 * `retry`, `discard` and `doctor` load them, and a recipe file's top-level code can leave a timer too): a timer the run left that throws,
 * or a promise it left that rejects with no handler, ended the process with Node's multi-line crash — after the run was
 * printed and recorded `succeeded`, or in the middle of it. Here each is one line on stderr, saying what the run was
 * recorded as and where in the recipe's folder it threw (`DEBUG=1` adds the stack), and, with `failCommand`, the
 * command exits 1 (it ran and failed: the recipe's code did), whatever the run's own outcome. One line per run: a
 * timer that throws again and again is said once. Only where the command owns its process — its executable, which
 * runs the watchdog (src/bin.mjs) — and for the rest of the process's life, since such code may throw after the
 * command has returned; a caller of `main()` keeps its own handling.
 */
export function catchStrayRecipeErrors(given: StrayErrorOptions): StrayErrors | undefined {
  if (!current) return undefined
  // Once per process: every command that loads recipes installs it (src/cli.ts), and the commands that run one ask
  // again for the handle, with their own options.
  if (stray) {
    Object.assign(stray.options, given)
    return stray.errors
  }
  const options = { ...given }
  let outcome: { recipe: string; status: string } | undefined
  let waiting: { error: unknown; rejected: boolean } | undefined
  let saidForThisRun = false
  let said = false
  const say = (error: unknown, rejected: boolean) => {
    const message = printable(error instanceof Error ? error.message : String(error), 500)
    const what = rejected ? 'a promise it did not wait for was rejected with nothing to handle it' : 'code it did not wait for (a timer?) threw'
    const head = outcome ? `error: recipe ${outcome.recipe}: its run was recorded ${outcome.status}, but ${what}` : `error: recipe code outside its run: ${what}`
    const stack = options.debug && error instanceof Error && error.stack ? `\n${error.stack}` : ''
    said = true
    try {
      // At once: it may be the process's last word.
      writeSync(2, `${head}: ${message}${recipeFrame(error, options.dirs)}${stack}\n`)
    } catch {
      // stderr closed by its reader: nothing to say it on.
    }
  }
  const seen = (rejected: boolean) => (error: unknown) => {
    if (!outcome) {
      // During the run: said with its outcome, once it is recorded.
      waiting ??= { error, rejected }
      return
    }
    if (saidForThisRun) return
    saidForThisRun = true
    say(error, rejected)
  }
  process.on('uncaughtException', seen(false))
  process.on('unhandledRejection', seen(true))
  process.on('exit', () => {
    if (waiting) say(waiting.error, waiting.rejected)
    if (said && options.failCommand && !process.exitCode) process.exitCode = 1
  })
  const errors: StrayErrors = {
    starts() {
      outcome = undefined
    },
    ran(recipe, status) {
      outcome = { recipe, status }
      saidForThisRun = waiting !== undefined
      if (waiting) say(waiting.error, waiting.rejected)
      waiting = undefined
    },
  }
  stray = { options, errors }
  return errors
}
