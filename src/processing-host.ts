import { threadConfig } from './config/thread-config.ts'
import { Worker } from 'node:worker_threads'
import { AggregatorRegistry, Counter, type Registry } from 'prom-client'
import type { Runtime } from './runtime.ts'
import { ALIVE_EVERY_MS, type ThreadMessage, type ThreadReply } from './processing-messages.ts'
import { setProcessingTaskRunner } from './coordination/processing-task.ts'
import { trackReceiverLoad } from './coordination/receiver-load.ts'
import { releaseInstance } from './instances.ts'
import { webhookState } from './webhooks/state.ts'
import { fileVersion } from './recipes/load-watch.ts'
import { LOAD_HELD_MS } from './recipes/loader.ts'
import { basename } from 'node:path'
import { HTTPError } from 'h3'
import { BACKLOG_GAUGES } from './backlog-metrics.ts'
import { startThreadPool } from './utils/start-thread-pool.ts'

type MetricsJson = Awaited<ReturnType<Registry['getMetricsAsJSON']>>

/** A snapshot's counters and histograms: what stays true of a thread after it stops answering (gauges go stale). */
function cumulative(json: MetricsJson): MetricsJson {
  return json.filter((metric) => String(metric.type) === 'counter' || String(metric.type) === 'histogram')
}

/** A busy thread's last answer as /metrics shows it: all but the backlog gauges the main thread counts meanwhile. */
function lastKnown(json: MetricsJson): MetricsJson {
  return json.filter((metric) => !BACKLOG_GAUGES.has(metric.name))
}

async function aggregate(parts: MetricsJson[]): Promise<MetricsJson> {
  return AggregatorRegistry.aggregate(parts as Parameters<typeof AggregatorRegistry.aggregate>[0]).getMetricsAsJSON()
}

export interface ProcessingThread {
  /** This runtime's metrics and the thread's, summed, as Prometheus text. */
  metrics(): Promise<string>
  /** False between a thread's death and its replacement being ready. */
  running(): boolean
  /**
   * Whether the thread reports the backlog gauges (the inbox's, the recipe queues', the outboxes'): running, and its
   * last metrics request answered in time. While it does not (busy past METRICS_WAIT_MS, or restarting), the main
   * thread counts them itself — an alert on the oldest pending event must fire when processing is stuck.
   */
  reportsMetrics(): boolean
  /** Runs a processing task (src/processing-tasks.ts) in the thread; rejects if the thread dies first or takes over TASK_WAIT_MS. */
  task(name: string, args: unknown): Promise<unknown>
  stop(): Promise<void>
}

/** The longest a request waits on a task in the thread (a day's report takes seconds, not minutes). */
const TASK_WAIT_MS = 120_000

/**
 * How long a task that runs recipe code waits for a thread being restarted (it never runs on the receiver's thread):
 * the restart's longest backoff.
 */
const THREAD_WAIT_MS = 30_000

/** How long `/metrics` waits for the thread's share before answering with the main thread's alone. */
const METRICS_WAIT_MS = 2_000
/** Restart backoff after the thread dies: 1 s doubling to 30 s, reset once a thread has run for a minute. */
const RESTART_MIN_MS = 1_000
const RESTART_MAX_MS = 30_000
const HEALTHY_AFTER_MS = 60_000
/** The longest silence the watchdog allows, whatever the recipe time limit. */
export const MOST_UNRESPONSIVE_MS = 60_000

/**
 * A thread silent this long is stuck — something holds its event loop, a recipe's `while (true)` say, which no
 * timer in the thread can cut — and is stopped and restarted: past the recipe time limit (a run is cut at it), within
 * 10 s to 60 s.
 */
export function unresponsiveAfterMs(recipeTimeoutMs: number): number {
  return Math.min(MOST_UNRESPONSIVE_MS, Math.max(10_000, recipeTimeoutMs + 5_000))
}

/**
 * How long a stop waits for the thread to end its work before cutting it: a recipe run in progress is waited for up
 * to the recipe time limit (the run is cut and recorded at it), then 10 s for the thread to record that and close.
 * It was 30 s whatever the limit, so a run past 30 s was cut with the thread — its events charged an attempt at the
 * next start — although the README promises the limit.
 */
export function stopWaitMs(recipeTimeoutMs: number): number {
  return recipeTimeoutMs + 10_000
}

/** Whether the database can be opened a second time by a thread (an in-memory SQLite database cannot). */
export function canRunInThread(rt: Runtime): boolean {
  return rt.store.dialect === 'postgres' || (rt.store.sqlite !== undefined && !rt.store.sqlite.memory)
}

/**
 * Starts the worker role in a worker thread (under `--role receiver`, a thread for the tasks requests hand over, which
 * processes nothing), wakes it after every inbox commit, and keeps it running: a
 * thread that dies (an uncaught error in a recipe's promise, an out-of-memory in the thread) is logged and
 * restarted with backoff while the receiver goes on accepting — the events wait in the inbox. Resolves once
 * the first thread is processing; rejects only if the first thread cannot even build its runtime (a
 * configuration problem, not a passing one).
 */
export async function startProcessingThread(
  rt: Runtime,
  options: {
    role?: 'all' | 'worker' | 'receiver'
    /** How long the thread may be silent before it is stopped and restarted (default: `unresponsiveAfterMs` of the recipe time limit). */
    unresponsiveAfterMs?: number
  } = {},
): Promise<ProcessingThread> {
  const role = options.role ?? 'all'
  // Before the thread lowers its priority: the thread pool is this process's, not processing's.
  startThreadPool()
  const pending = new Map<number, (json: MetricsJson | undefined) => void>()
  const tasks = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>()
  let seq = 0
  let current: Worker | undefined
  let readyWorker: Worker | undefined
  let stopping = false
  let stopped: (() => void) | undefined
  let backoff = RESTART_MIN_MS
  let cancelRestart: (() => void) | undefined
  // Until a first thread is ready, a thread that dies is the start-up failure startProcessingThread rejects with,
  // not one to restart: the caller closes the runtime it would restart from.
  let startedOnce = false

  const send = (message: ThreadMessage) => current?.postMessage(message)
  /** The current thread's last metrics answer, and the counters of the threads before it (a restart keeps them). */
  let lastAnswer: MetricsJson | undefined
  let earlierThreads: MetricsJson | undefined
  let silent = false
  /**
   * Recipe files whose top-level code held a thread until the watchdog stopped it, each with its version then: the
   * next threads leave them out (reported broken) until they change, so one bad file cannot keep processing — or the
   * service's start — from ever getting past it.
   */
  const leftOut = new Map<string, string>()
  /** Tasks that run recipe code, waiting for the next thread to be ready. */
  const waitingForThread = new Set<{ ready(): void; gone(error: Error): void }>()
  const restarts = new Counter({ name: 'switchboard_processing_thread_restarts_total', help: 'Processing threads restarted after stopping (an uncaught error, out of memory, or stuck)', registers: [rt.metrics] })
  // The receiver's commit rate and event-loop use, read by the thread to hold back during a burst (PROCESSING_YIELD_ABOVE).
  const load = trackReceiverLoad(rt.config.pipeline.processingYieldAbove)

  function spawn(): Promise<void> {
    const worker = new Worker(new URL('./worker-thread.mjs', import.meta.url), {
      // A worker's process has no receiver to hold back for.
      workerData: { config: threadConfig(rt.config), role, receiverLoad: role === 'all' ? load.shared : undefined, leftOut: [...leftOut] },
    })
    current = worker
    const startedAt = rt.clock.now()
    return new Promise<void>((resolve, reject) => {
      let ready = false
      let instanceId: string | undefined
      /** The recipe file the thread is loading now, and the one it was loading when the watchdog stopped it. */
      let loading: string | undefined
      let stuckLoading: string | undefined
      // The watchdog: real time, as the thread's own timers run.
      let lastHeard = performance.now()
      const silentFor = options.unresponsiveAfterMs ?? unresponsiveAfterMs(rt.config.pipeline.recipeTimeoutMs)
      let lastLook = performance.now()
      const watchdog = setInterval(() => {
        const now = performance.now()
        // Looking far later than asked, this thread stood still too — the whole process frozen (a VM paused, SIGSTOP)
        // or its loop blocked — and the thread's "alive" may be waiting in the queue: a fresh window, not a restart.
        const stoodStill = now - lastLook > ALIVE_EVERY_MS * 5
        lastLook = now
        if (stoodStill) lastHeard = now
        if (stopping || now - lastHeard < (loading === undefined ? silentFor : Math.min(silentFor, LOAD_HELD_MS))) return
        clearInterval(watchdog)
        const silentMs = Math.round(performance.now() - lastHeard)
        if (loading !== undefined) {
          stuckLoading = loading
          rt.log.error({ file: loading, silent_ms: silentMs }, `recipe file ${basename(loading)} never finished loading: its top-level code held the processing thread (a synchronous loop?); stopping the thread, and leaving the file out until it changes`)
        } else rt.log.error({ silent_ms: silentMs }, 'the processing thread stopped answering (a recipe that never yields, e.g. a synchronous loop?); stopping it to restart it')
        void worker.terminate()
      }, ALIVE_EVERY_MS)
      watchdog.unref()
      worker.on('message', (reply: ThreadReply) => {
        lastHeard = performance.now()
        if (reply.type === 'alive') return
        if (reply.type === 'loading') loading = reply.file
        else if (reply.type === 'loaded') loading = undefined
        else if (reply.type === 'instance') instanceId = reply.instanceId
        else if (reply.type === 'ready') {
          ready = true
          startedOnce = true
          instanceId = reply.instanceId
          readyWorker = worker
          resolve()
          for (const waiting of waitingForThread) waiting.ready()
        } else if (reply.type === 'failed') reject(new Error(`the processing thread could not start: ${reply.error}`))
        else if (reply.type === 'metrics') {
          pending.get(reply.id)?.(reply.json as MetricsJson)
          pending.delete(reply.id)
        } else if (reply.type === 'task') {
          const waiting = tasks.get(reply.id)
          tasks.delete(reply.id)
          if (reply.ok) waiting?.resolve(reply.value)
          else waiting?.reject(new Error(reply.error))
        } else if (reply.type === 'stopped') stopped?.()
      })
      // The whole error: its stack names the recipe file a detached throw came from.
      worker.on('error', (error) => rt.log.error({ err: error }, 'the processing thread failed'))
      worker.on('exit', (code) => {
        clearInterval(watchdog)
        if (current === worker) current = undefined
        if (readyWorker === worker) readyWorker = undefined
        // Its counters live on in /metrics (summed with its successor's), as a process's would across a restart of a
        // part of it: a thread's restart read as every recipe run and delivery counter dropping back or vanishing.
        const last = lastAnswer
        lastAnswer = undefined
        if (last) void aggregate(earlierThreads ? [earlierThreads, cumulative(last)] : [cumulative(last)]).then((sum) => (earlierThreads = sum))
        // Metrics requests the dead thread will never answer.
        for (const [id, answer] of pending) {
          answer(undefined)
          pending.delete(id)
        }
        // Nor the tasks it was running: the request gets an error it can show, and may be tried again — a 503 with
        // Retry-After for /admin and the dashboard, which answered a bare 500 "internal error" while it restarted.
        for (const [id, waiting] of tasks) {
          waiting.reject(
            new HTTPError({
              status: 503,
              message: 'the processing thread stopped before finishing (a recipe that never returns, or out of memory: the log says which); it is restarting — try again in a few seconds',
              headers: { 'retry-after': '5' },
            }),
          )
          tasks.delete(id)
        }
        const version = stuckLoading === undefined ? undefined : fileVersion(stuckLoading)
        if (stuckLoading !== undefined && version !== undefined) leftOut.set(stuckLoading, version)
        // The first thread was held by a recipe file's top-level code: the service starts without that file.
        if (!ready && !startedOnce && version !== undefined && !stopping) {
          if (instanceId) void releaseInstance(rt, instanceId).catch(() => {})
          spawn().then(resolve, reject)
          return
        }
        if (!ready) reject(new Error(`the processing thread exited while starting (code ${code})`))
        if (stopping) return
        if (!startedOnce) {
          rt.log.info({ code }, 'the processing thread exited while starting; not restarted (the service does not start)')
          return
        }
        if (rt.clock.now() - startedAt > HEALTHY_AFTER_MS) backoff = RESTART_MIN_MS
        const wait = backoff
        backoff = Math.min(RESTART_MAX_MS, backoff * 2)
        rt.log.error({ code, restartInMs: wait }, 'the processing thread stopped; restarting it (events wait in the inbox meanwhile)')
        restarts.inc()
        // What the dead thread had claimed is claimable at once (its process lives on, so no reaper would judge it).
        if (instanceId) void releaseInstance(rt, instanceId).catch((error: Error) => rt.log.warn({ err: error.message }, 'could not give back the stopped thread\'s claims; they lapse on their own'))
        cancelRestart = rt.clock.setTimeout(() => {
          if (stopping) return
          spawn().catch((error: Error) => rt.log.error({ err: error.message }, 'the processing thread could not restart'))
        }, wait)
      })
    })
  }

  await spawn()

  // Coalesced: one wake per tick however many commits landed in it.
  let waking = false
  // A receiver's task thread processes no events: nothing to wake after a commit, no burst to hold back for — the
  // receiver's commits are not watched at all.
  const watchesCommits = role !== 'receiver'
  // A batch being written counts as deliveries arriving (a slow commit must not end the hold).
  const offWriting = watchesCommits ? webhookState(rt).inbox.onWriting((on) => load.writing(on, Date.now())) : () => {}
  const off = watchesCommits
    ? webhookState(rt).inbox.onCommitted((deliveries) => {
        // Wall-clock time, as the thread reads it (its runtime runs on the system clock).
        load.committed(deliveries, Date.now())
        if (waking) return
        waking = true
        setImmediate(() => {
          waking = false
          send({ type: 'wake' })
        })
      })
    : () => {}
  const thread: ProcessingThread = {
    running: () => readyWorker !== undefined && readyWorker === current,
    reportsMetrics: () => thread.running() && !silent,
    task(name: string, args: unknown): Promise<unknown> {
      const id = seq++
      return new Promise<unknown>((resolve, reject) => {
        if (!current) return reject(new Error('the processing thread is not running; try again'))
        const cancel = rt.clock.setTimeout(() => {
          tasks.delete(id)
          reject(new Error(`the processing thread did not finish ${name} within ${TASK_WAIT_MS / 1000} s`))
        }, TASK_WAIT_MS)
        tasks.set(id, {
          resolve: (value) => {
            cancel()
            resolve(value)
          },
          reject: (error) => {
            cancel()
            reject(error)
          },
        })
        send({ type: 'task', id, name, args })
      })
    },
    async metrics() {
      const id = seq++
      // Only a thread that is ready reports: one still starting has registered its backlog gauges, but until it is
      // ready the main thread counts the backlog itself (src/server.ts), and the two would be summed.
      const reporting = thread.running() ? readyWorker : undefined
      const theirs = new Promise<MetricsJson | undefined>((resolve) => {
        if (!reporting) return resolve(undefined)
        const cancel = rt.clock.setTimeout(() => {
          pending.delete(id)
          resolve(undefined)
        }, METRICS_WAIT_MS)
        pending.set(id, (json) => {
          cancel()
          resolve(json)
        })
        reporting.postMessage({ type: 'metrics', id } satisfies ThreadMessage)
      })
      // The thread's answer first: whether it came decides what the main thread counts itself (reportsMetrics).
      const other = await theirs
      silent = reporting !== undefined && other === undefined
      if (other) lastAnswer = other
      // Summed with the thread's, a metric prom-client marks `omit` (process_start_time_seconds: its sum over processes
      // would mean nothing) was dropped — but only this thread has it, and uptime and restart alerts read it.
      const own = (await rt.metrics.getMetricsAsJSON()).map((metric) => (String(metric.aggregator) === 'omit' ? { ...metric, aggregator: 'first' as const } : metric))
      // A thread that did not answer in time (busy) is shown by its last answer — its counters, and the gauges only it
      // keeps (the call queue's depth read 0 while a recipe held the thread) — not as none at all.
      const threads = other ?? (lastAnswer ? lastKnown(lastAnswer) : undefined)
      const parts = [own, ...(threads ? [threads] : []), ...(earlierThreads ? [earlierThreads] : [])]
      if (parts.length === 1) return rt.metrics.metrics()
      return AggregatorRegistry.aggregate(parts as Parameters<typeof AggregatorRegistry.aggregate>[0]).metrics()
    },
    async stop() {
      stopping = true
      setProcessingTaskRunner(rt, undefined)
      for (const waiting of waitingForThread) waiting.gone(new Error('the service is stopping'))
      off()
      offWriting()
      cancelRestart?.()
      const worker = current
      if (!worker) return
      const done = new Promise<void>((resolve) => {
        stopped = resolve
        worker.once('exit', () => resolve())
      })
      send({ type: 'stop' })
      await Promise.race([done, new Promise((r) => setTimeout(r, stopWaitMs(rt.config.pipeline.recipeTimeoutMs)).unref())])
      await worker.terminate()
    },
  }
  /** Resolves once a thread is ready; rejects after THREAD_WAIT_MS, or when the service stops. */
  const threadReady = () =>
    new Promise<void>((resolve, reject) => {
      const waiting = {
        ready: () => (waitingForThread.delete(waiting), cancel(), resolve()),
        gone: (error: Error) => (waitingForThread.delete(waiting), cancel(), reject(error)),
      }
      const cancel = rt.clock.setTimeout(() => waiting.gone(new Error(`the processing thread is restarting and was not back within ${THREAD_WAIT_MS / 1000} s; try again in a minute`)), THREAD_WAIT_MS)
      waitingForThread.add(waiting)
    })
  // Requests' heavy tasks go to the thread while it runs; between a death and the restart they run here — but for those
  // that run recipe code, which wait for the new thread (the receiver's thread never runs a recipe).
  setProcessingTaskRunner(rt, (name, args, recipeCode) => {
    if (thread.running()) return thread.task(name, args)
    return recipeCode ? threadReady().then(() => thread.task(name, args)) : undefined
  })
  return thread
}
