import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import { closeWorker } from '../utils/close-worker.ts'

/**
 * WAL checkpoints on a thread of their own. SQLite runs a checkpoint inside the commit that crosses its
 * threshold, on whichever connection makes it: the commit then copies every page of the log into the
 * database file and waits for two fsyncs — 30–40 ms for ~1,300 pages on this machine's disk, three quarters
 * of it waiting on the disk. On the receiver that held up every provider request waiting on the commit; on the
 * processing thread, every event behind it. Here a thread with its own connection runs a PASSIVE checkpoint
 * (it never waits for a lock, and writers go on appending while it copies) every CHECKPOINT_EVERY_MS, and the
 * service's own connections checkpoint only past BACKSTOP_CHECKPOINT_PAGES (src/db/connect.ts): a backstop if
 * this thread stops or cannot keep up. The thread runs at the process's priority (not PROCESSING_NICE): it is
 * mostly waiting on the disk, and its CPU — copying pages, ~7 µs each — is a percent of a core under a burst.
 */
export const CHECKPOINT_EVERY_MS = 200

export interface CheckpointResult {
  /** Frames in the log when the checkpoint ran. */
  frames: number
  /** Frames copied into the database file (all of them but those a reader still needs). */
  backfilled: number
  /** The checkpoint's wall time. */
  ms: number
}

export interface Checkpointer {
  /** Runs a checkpoint now; resolves with its result (undefined: skipped, failed, or the thread is gone). */
  checkpoint(): Promise<CheckpointResult | undefined>
  close(): Promise<void>
}

export interface CheckpointerOptions {
  everyMs?: number
  /** Told of every periodic checkpoint whose figures changed since the last one (an idle log is not reported again). */
  onCheckpoint?(result: CheckpointResult): void
  /** Told when a checkpoint fails (other than the checkpoint lock being held: that one is just skipped). */
  onError?(message: string): void
}

// Plain CommonJS, evaluated in the worker: no TypeScript loader needed there.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.driver)
const db = new Database(workerData.file)
// The log's pages are synced before they are copied, the database file after: a checkpoint cut short by a
// crash or a power loss is simply run again from the log, which stays authoritative until then.
db.pragma('synchronous = FULL')
db.pragma('busy_timeout = 0')
// This connection writes nothing of its own, so it never checkpoints on commit either.
db.pragma('wal_autocheckpoint = 0')
let timer
let closed = false
const run = () => {
  const started = performance.now()
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)')
    // busy: another connection holds the checkpoint lock (a backstop checkpoint, another process's thread).
    if (r.busy) return undefined
    return { frames: r.log, backfilled: r.checkpointed, ms: performance.now() - started }
  } catch (error) {
    if (error && error.code === 'SQLITE_BUSY') return undefined
    parentPort.postMessage({ error: String((error && error.message) || error) })
    return undefined
  }
}
// Reported when it changed: an idle log that was copied already answers the same figures every time.
let last = { frames: 0, backfilled: 0 }
const tick = () => {
  if (closed) return
  const result = run()
  if (result && result.frames > 0 && (result.frames !== last.frames || result.backfilled !== last.backfilled)) {
    last = result
    parentPort.postMessage({ result })
  }
  timer = setTimeout(tick, workerData.everyMs)
}
timer = setTimeout(tick, workerData.everyMs)
parentPort.on('message', (msg) => {
  if (msg.checkpoint) {
    parentPort.postMessage({ id: msg.id, result: run() })
    return
  }
  if (msg.close) {
    closed = true
    clearTimeout(timer)
    db.close()
    parentPort.postMessage({ closed: true })
  }
})
`

interface Reply {
  id?: number
  result?: CheckpointResult
  error?: string
}

/** Starts the checkpoint thread for a SQLite database file. */
export function startCheckpointer(file: string, options: CheckpointerOptions = {}): Checkpointer {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3')
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { file, driver, everyMs: options.everyMs ?? CHECKPOINT_EVERY_MS } })
  // Never keeps the process alive on its own.
  worker.unref()
  let seq = 0
  let closed: Promise<void> | undefined
  let exited = false
  const waiting = new Map<number, (result: CheckpointResult | undefined) => void>()
  worker.on('message', (reply: Reply) => {
    if (reply.id !== undefined) {
      waiting.get(reply.id)?.(reply.result)
      waiting.delete(reply.id)
    } else if (reply.error) options.onError?.(reply.error)
    else if (reply.result) options.onCheckpoint?.(reply.result)
  })
  const settleAll = () => {
    for (const resolve of waiting.values()) resolve(undefined)
    waiting.clear()
  }
  // The service's connections still checkpoint as a backstop: a thread that died is reported, not fatal.
  worker.on('error', (error) => {
    options.onError?.(`the checkpoint thread failed: ${error.message}`)
    settleAll()
  })
  worker.on('exit', () => {
    exited = true
    settleAll()
  })
  return {
    checkpoint() {
      if (closed || exited) return Promise.resolve(undefined)
      return new Promise((resolve) => {
        const id = ++seq
        waiting.set(id, resolve)
        worker.postMessage({ id, checkpoint: true })
      })
    },
    close() {
      closed ??= exited ? Promise.resolve() : closeWorker(worker)
      return closed
    },
  }
}
