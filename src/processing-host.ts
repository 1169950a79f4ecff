import { Worker } from 'node:worker_threads'
import { AggregatorRegistry, type Registry } from 'prom-client'

type MetricsJson = Awaited<ReturnType<Registry['getMetricsAsJSON']>>
import type { Runtime } from './runtime.ts'
import type { ThreadMessage, ThreadReply } from './processing-thread.ts'
import { webhookState } from './webhooks/state.ts'

export interface ProcessingThread {
  /** This runtime's metrics and the thread's, summed, as Prometheus text. */
  metrics(): Promise<string>
  stop(): Promise<void>
}

/** Whether the database can be opened a second time by a thread (an in-memory SQLite database cannot). */
export function canRunInThread(rt: Runtime): boolean {
  return rt.store.dialect === 'postgres' || (rt.store.sqlite !== undefined && !rt.store.sqlite.memory)
}

/** Starts the worker role in a worker thread and wakes it after every inbox commit. */
export async function startProcessingThread(rt: Runtime): Promise<ProcessingThread> {
  const worker = new Worker(new URL('./worker-thread.mjs', import.meta.url), { workerData: { config: rt.config } })
  const pending = new Map<number, (json: MetricsJson) => void>()
  let seq = 0
  let stopped: (() => void) | undefined
  await new Promise<void>((resolve, reject) => {
    worker.on('message', (reply: ThreadReply) => {
      if (reply.type === 'ready') resolve()
      else if (reply.type === 'failed') reject(new Error(`the processing thread could not start: ${reply.error}`))
      else if (reply.type === 'metrics') {
        pending.get(reply.id)?.(reply.json as MetricsJson)
        pending.delete(reply.id)
      } else if (reply.type === 'stopped') stopped?.()
    })
    worker.once('error', reject)
  })
  worker.on('error', (error) => rt.log.error({ err: error }, 'the processing thread failed'))
  const send = (message: ThreadMessage) => worker.postMessage(message)
  // Coalesced: one wake per tick however many commits landed in it.
  let waking = false
  const off = webhookState(rt).inbox.onCommitted(() => {
    if (waking) return
    waking = true
    setImmediate(() => {
      waking = false
      send({ type: 'wake' })
    })
  })
  return {
    async metrics() {
      const id = seq++
      const theirs = new Promise<MetricsJson>((resolve) => {
        pending.set(id, resolve)
        send({ type: 'metrics', id })
      })
      const [own, other] = await Promise.all([rt.metrics.getMetricsAsJSON(), theirs])
      return AggregatorRegistry.aggregate([own, other] as Parameters<typeof AggregatorRegistry.aggregate>[0]).metrics()
    },
    async stop() {
      off()
      const done = new Promise<void>((resolve) => (stopped = resolve))
      send({ type: 'stop' })
      await Promise.race([done, new Promise((r) => setTimeout(r, 30_000).unref())])
      await worker.terminate()
    },
  }
}
