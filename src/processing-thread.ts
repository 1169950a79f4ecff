/**
 * The worker role inside `serve` (`--role all` and `--role worker`): read model, consumers, recipes, the call queue and
 * reconciliation on their own event loop and database connection (SQLite WAL lets the receiver's writer
 * and this thread share the file; Postgres gives it its own pool), so the receiver's event loop only
 * verifies, commits and answers. The main thread wakes it after each commit, asks it for its metrics, and
 * restarts it if it dies (src/processing-host.ts).
 *
 * Under `--role receiver` the thread processes nothing: it runs the heavy work the dashboard and the admin API ask for
 * (src/processing-tasks.ts) — listing and running recipes, reports, imports — off the receiver's event loop all the same.
 */
import { restoreFilters, type ThreadConfig } from './config/thread-config.ts'
import { getPriority, setPriority } from 'node:os'
import { parentPort, workerData } from 'node:worker_threads'
import { Registry } from 'prom-client'
import type { Config } from './config/load.ts'
import { createRuntime, type Runtime } from './runtime.ts'
import pino from 'pino'
import { createLogger } from './utils/logger.ts'
import { useAsProcessingConnection } from './db/connect.ts'
import { logUnhandledRejections } from './utils/unhandled-rejections.ts'
import { logUncaughtRecipeErrors } from './recipes/uncaught-recipe-errors.ts'
import { startBackground, startTaskHost } from './background.ts'
import { registerBacklogMetrics } from './backlog-metrics.ts'
import { sleep } from './utils/clock.ts'
import { createReceivingCheck, createYieldGate, setReceivingCheck, setYieldGate } from './coordination/receiver-load.ts'
import { runTaskByName } from './processing-tasks.ts'
import { ALIVE_EVERY_MS, type ThreadMessage, type ThreadReply } from './processing-messages.ts'
import { webhookState } from './webhooks/state.ts'
import { webhookMetrics } from './webhooks/metrics.ts'
import { fileVersion, setLoadWatch } from './recipes/load-watch.ts'

/** Why a recipe file is left out (the host stopped a thread its top-level code held: src/processing-host.ts). */
const LEFT_OUT = 'its top-level code never finished loading (a synchronous loop?) and held the processing thread until it was stopped; left out until the file changes'

/** Backoff while the background work cannot start (the database is unreachable): 500 ms doubling to 15 s. */
const START_RETRY_MIN_MS = 500
const START_RETRY_MAX_MS = 15_000

const port = parentPort
if (!port) throw new Error('processing-thread.ts runs only as a worker thread')
const { config: handed, role = 'all', receiverLoad, leftOut = [] } = workerData as {
  config: ThreadConfig
  role?: 'all' | 'worker' | 'receiver'
  receiverLoad?: SharedArrayBuffer
  /** Recipe files whose top-level code held an earlier thread for good, each with its version then (src/recipes/load-watch.ts). */
  leftOut?: Array<[file: string, version: string]>
}

let rt: Runtime
let config: Config
try {
  // Destinations' filters (functions) cannot be cloned into a thread: loaded again from the config file.
  config = await restoreFilters(handed)
  // The main thread migrated already. Its own registry without process metrics: the main thread reports
  // the process, and sums the rest.
  // Its log lines written as they are made: buffered, the lines a recipe wrote just before a loop that holds this thread
  // (the ones that tell which recipe it is) were lost with the thread when the watchdog stopped it.
  const log = createLogger({ level: config.logLevel, destination: pino.destination({ dest: 1, sync: true }) })
  rt = await createRuntime(config, { skipMigrate: true, metrics: new Registry(), log })
} catch (error) {
  port.postMessage({ type: 'failed', error: (error as Error).message } satisfies ThreadReply)
  process.exit(1)
}
port.postMessage({ type: 'instance', instanceId: rt.instanceId } satisfies ThreadReply)
// The watchdog's signal: silent only while something (a recipe's synchronous loop) holds this thread's event loop.
setInterval(() => port.postMessage({ type: 'alive' } satisfies ThreadReply), ALIVE_EVERY_MS).unref()
// Which recipe file is loading, for the watchdog to name one whose top-level code never returns; such a file, as it
// was then, is not loaded again here (reported broken) until it changes.
const heldEarlier = new Map(leftOut)
setLoadWatch(rt, {
  loading: (file) => port.postMessage({ type: 'loading', file } satisfies ThreadReply),
  loaded: (file) => port.postMessage({ type: 'loaded', file } satisfies ThreadReply),
  leftOut: (file) => (heldEarlier.has(file) && heldEarlier.get(file) === fileVersion(file) ? LEFT_OUT : undefined),
})
/** Processing here (`all`, `worker`), or only the tasks a receiver's requests hand over (`receiver`). */
const processes = role !== 'receiver'
if (processes) {
  // This connection writes only what is derived from the inbox; the checkpoint thread runs the file's checkpoints (see useAsProcessingConnection).
  useAsProcessingConnection(rt.store)
  // The backlog gauges are counted here, in full, off the receiver's event loop; /metrics sums this registry with
  // the main thread's, whose own backlog gauges stay empty while this thread runs (src/backlog-metrics.ts).
  registerBacklogMetrics(rt, { role: () => role })
}
logUnhandledRejections(rt)
logUncaughtRecipeErrors(rt, [config.recipes.dir])
// PROCESSING_NICE (default 5): the receiver's threads get a core first, since its answers are what the
// provider waits for while processing only has to keep up over seconds. Measured under a burst on two cores
// (README → Benchmarks): ingest while processing +25–40 %, p99 while draining 60–150 ms → 20–30 ms, end to end
// the same or better. Nice 5 rather than 10: beside other busy programs (outside a container or service
// cgroup, where nice only ranks this service's own threads) a niced thread gets a smaller share of a busy
// core — about a quarter at 5, a tenth at 10. Never raises a priority: a process started at a higher nice
// value keeps it. On Linux a nice value belongs to one thread (this one); elsewhere it would be the whole process.
// Under `--role worker` there is no receiver in the process to give way to: its thread keeps the process's priority.
if (process.platform === 'linux' && role !== 'worker' && config.pipeline.processingNice > getPriority(0)) {
  try {
    setPriority(0, config.pipeline.processingNice)
  } catch (error) {
    rt.log.warn({ err: (error as Error).message }, 'could not lower the processing thread\'s priority; it runs at the receiver\'s')
  }
}

let stopBackground: (() => Promise<void>) | undefined
let stopping = false
// Webhook batches, queued calls and deliveries wait while the receiver takes a burst (PROCESSING_YIELD_ABOVE;
// src/coordination/receiver-load.ts); stopping ends the wait. While it takes deliveries at all, webhook batches are smaller.
if (receiverLoad && config.pipeline.processingYieldAbove > 0) {
  const metrics = webhookMetrics(rt.metrics)
  metrics.holding.set(0)
  setYieldGate(
    rt,
    createYieldGate(receiverLoad, {
      now: () => rt.clock.now(),
      sleep: (ms) => sleep(rt.clock, ms),
      stopping: () => stopping,
      onHold(holding, heldMs) {
        metrics.holding.set(holding ? 1 : 0)
        if (!holding) metrics.heldSeconds.inc(heldMs / 1000)
      },
    }),
  )
  setReceivingCheck(rt, createReceivingCheck(receiverLoad, () => rt.clock.now()))
}
// Wakes are coalesced: a pass of synchronous SQLite work does not yield to the message queue, so the wakes
// of every commit during it arrive together afterwards — hundreds after a burst, each of which started a pass
// whose claim (a write transaction, competing with the receiver's commits for the lock) found nothing.
let wakeQueued = false
port.on('message', (message: ThreadMessage) => {
  if (message.type === 'wake') {
    if (wakeQueued) return
    wakeQueued = true
    setImmediate(() => {
      wakeQueued = false
      webhookState(rt).worker?.wake()
    })
  }
  else if (message.type === 'metrics') {
    void rt.metrics.getMetricsAsJSON().then((json) => port.postMessage({ type: 'metrics', id: message.id, json } satisfies ThreadReply))
  } else if (message.type === 'task') {
    // Heavy work a request asked for (src/processing-tasks.ts), run here rather than on the receiver's loop.
    void runTaskByName(rt, message.name, message.args).then(
      (value) => port.postMessage({ type: 'task', id: message.id, ok: true, value } satisfies ThreadReply),
      (error: unknown) => port.postMessage({ type: 'task', id: message.id, ok: false, error: error instanceof Error ? error.message : String(error) } satisfies ThreadReply),
    )
  } else if (message.type === 'stop') {
    stopping = true
    void (async () => {
      await stopBackground?.()
      await rt.close()
      port.postMessage({ type: 'stopped' } satisfies ThreadReply)
    })()
  }
})

// Starting reads the database (recipe schedules, queues): a database that is down right now — a restart,
// a failover — is waited out here rather than leaving the service without processing.
for (let wait = START_RETRY_MIN_MS; !stopping; wait = Math.min(START_RETRY_MAX_MS, wait * 2)) {
  try {
    stopBackground = processes ? await startBackground(rt, { role: 'worker' }) : await startTaskHost(rt)
    break
  } catch (error) {
    rt.log.error({ err: (error as Error).message, retryInMs: wait }, processes ? 'processing could not start; retrying' : 'the task thread could not start; retrying')
    await sleep(rt.clock, wait)
  }
}
if (!stopping) port.postMessage({ type: 'ready', instanceId: rt.instanceId } satisfies ThreadReply)
