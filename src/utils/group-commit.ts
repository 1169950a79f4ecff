import { nextTurn } from './next-turn.ts'

/**
 * Group commit for writes that arrive one at a time: every item added while a batch is being written (or in
 * the same turn of the event loop) joins the next batch, so the commit rate stays flat as items per second
 * grow. Each `add` settles once its own batch is written. A batch that fails is written again one item at a
 * time, so one bad item fails alone; if the database itself is down, every item of the batch fails.
 */
export interface GroupCommit<T> {
  /** Resolves once the batch holding `item` is written; rejects with its error if it cannot be. */
  add(item: T): Promise<void>
}

interface Waiting<T> {
  item: T
  resolve(): void
  reject(error: unknown): void
}

export function createGroupCommit<T>(write: (items: T[]) => Promise<void>): GroupCommit<T> {
  let queue: Array<Waiting<T>> = []
  let running: Promise<void> | undefined

  async function writeBatch(batch: Array<Waiting<T>>): Promise<void> {
    try {
      await write(batch.map((w) => w.item))
      for (const w of batch) w.resolve()
      return
    } catch (error) {
      if (batch.length === 1) {
        batch[0]!.reject(error)
        return
      }
    }
    for (const w of batch) {
      try {
        await write([w.item])
        w.resolve()
      } catch (error) {
        w.reject(error)
      }
    }
  }

  function start(): void {
    if (running) return
    running = (async () => {
      // Let the answers already on the wire land first: without this yield each commit carries one item.
      await nextTurn()
      while (queue.length > 0) {
        const batch = queue
        queue = []
        await writeBatch(batch)
      }
    })().finally(() => {
      running = undefined
      if (queue.length > 0) start()
    })
  }

  return {
    add(item) {
      return new Promise<void>((resolve, reject) => {
        queue.push({ item, resolve, reject })
        start()
      })
    },
  }
}
