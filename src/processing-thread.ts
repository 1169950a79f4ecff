import { parentPort, workerData } from 'node:worker_threads'
import { Registry } from 'prom-client'
import type { Config } from './config/load.ts'
import { createRuntime } from './runtime.ts'
import { startBackground } from './server.ts'
import { webhookState } from './webhooks/state.ts'

/**
 * The worker role inside `serve --role all`: read model, consumers, recipes, the call queue and
 * reconciliation on their own event loop and database connection (SQLite WAL lets the receiver's writer
 * and this thread share the file; Postgres gives it its own pool), so the receiver's event loop only
 * verifies, commits and answers. The main thread wakes it after each commit and asks it for its metrics.
 */
export type ThreadMessage = { type: 'wake' } | { type: 'metrics'; id: number } | { type: 'stop' }
export type ThreadReply = { type: 'ready' } | { type: 'metrics'; id: number; json: unknown } | { type: 'stopped' } | { type: 'failed'; error: string }

const port = parentPort
if (!port) throw new Error('processing-thread.ts runs only as a worker thread')
const { config } = workerData as { config: Config }
try {
  // The main thread migrated already.
  // Its own registry without process metrics: the main thread reports the process, and sums the rest.
  const rt = await createRuntime(config, { skipMigrate: true, metrics: new Registry() })
  // This connection writes what is derived from the inbox (read model, recipe queues, queued calls). In WAL
  // mode NORMAL survives a killed process; only an OS crash or power loss can drop its last commits, which
  // processing then redoes from the inbox (the receiver's own connection stays FULL: a 2xx is a promise).
  rt.store.sqlite?.pragma('synchronous = NORMAL')
  const stop = await startBackground(rt, { role: 'worker' })
  port.on('message', (message: ThreadMessage) => {
    if (message.type === 'wake') webhookState(rt).worker?.wake()
    else if (message.type === 'metrics') {
      void rt.metrics.getMetricsAsJSON().then((json) => port.postMessage({ type: 'metrics', id: message.id, json } satisfies ThreadReply))
    } else if (message.type === 'stop') {
      void (async () => {
        await stop()
        await rt.close()
        port.postMessage({ type: 'stopped' } satisfies ThreadReply)
      })()
    }
  })
  port.postMessage({ type: 'ready' } satisfies ThreadReply)
} catch (error) {
  port.postMessage({ type: 'failed', error: (error as Error).message } satisfies ThreadReply)
}
