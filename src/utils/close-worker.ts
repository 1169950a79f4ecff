import type { Worker } from 'node:worker_threads'

/**
 * Stops a worker thread that closes its database when sent `{ close: true }` and then answers
 * `{ closed: true }`: terminated once it has answered, or after `graceMs` if it does not (a thread stuck in a
 * statement). Resolves when the thread is gone.
 */
export function closeWorker(worker: Worker, graceMs = 2_000): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = () => {
      clearTimeout(timer)
      worker.off('message', onMessage)
      worker.off('exit', onExit)
      void worker.terminate().then(() => resolve())
    }
    const onMessage = (reply: { closed?: boolean } | undefined) => {
      if (reply?.closed) stop()
    }
    const onExit = () => {
      clearTimeout(timer)
      worker.off('message', onMessage)
      resolve()
    }
    const timer = setTimeout(stop, graceMs)
    worker.on('message', onMessage)
    worker.on('exit', onExit)
    worker.postMessage({ close: true })
  })
}
