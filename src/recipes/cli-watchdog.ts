import { writeSync } from 'node:fs'
import { Worker } from 'node:worker_threads'
import type { LoadWatch } from './load-watch.ts'

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
let runningMs = workerData.runningMs
parentPort.on('message', (m) => {
  if ('loading' in m) loading = m.loading
  if (m.runningMs) runningMs = m.runningMs
})
const look = setInterval(() => {
  const now = Atomics.load(beat, 0)
  if (now !== last) { last = now; since = Date.now(); return }
  const limit = loading === undefined ? runningMs : workerData.loadingMs
  if (Date.now() - since < limit) return
  clearInterval(look)
  const held = Math.round((Date.now() - since) / 1000)
  const line = loading
    ? 'error: recipe file ' + basename(loading) + ' never finished loading: its top-level code held this command for ' + held + ' s without returning (a synchronous loop?); fix the file and run the command again'
    : 'error: recipe code held this command for ' + held + ' s without returning (a synchronous loop in run?); stopped it'
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
    parentPort.postMessage({ line })
  })
}, 200)
`

/** The watchdog of this process's command, if one runs: commands that load recipes without a runtime tell it too. */
let current: CliWatchdog | undefined

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
  worker.on('message', (stuck: { line: string }) => {
    // Written at once: the process ends right after.
    writeSync(2, `${stuck.line}\n`)
    process.exit(1)
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
