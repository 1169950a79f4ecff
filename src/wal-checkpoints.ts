import { Gauge, Histogram } from 'prom-client'
import type { Runtime } from './runtime.ts'
import { checkpointOnlyAsBackstop } from './db/connect.ts'
import { startCheckpointer, type Checkpointer } from './db/checkpointer.ts'
import { defineMetrics } from './utils/define-metrics.ts'

interface WalCheckpointMetrics {
  seconds: Histogram
  frames: Gauge
}

/** The checkpoint thread's metrics. */
const walCheckpointMetrics = defineMetrics((registers): WalCheckpointMetrics => ({
  seconds: new Histogram({ name: 'switchboard_sqlite_checkpoint_seconds', help: 'WAL checkpoints run by the checkpoint thread (those that found frames in the log)', buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5], registers }),
  frames: new Gauge({ name: 'switchboard_sqlite_wal_frames', help: 'Frames in the WAL at the last checkpoint; growing from one scrape to the next means checkpoints cannot keep up (a long-running reader)', registers }),
}))

/**
 * A running service's SQLite file gets its WAL checkpoints from a thread of its own (src/db/checkpointer.ts):
 * this process's connections then checkpoint only as a backstop, and so does every connection the service
 * opens (the inbox writer's, the processing thread's). Returns undefined on Postgres and in-memory databases.
 */
export function startWalCheckpoints(rt: Runtime): Checkpointer | undefined {
  const sqlite = rt.store.sqlite
  if (!sqlite || sqlite.memory) return undefined
  checkpointOnlyAsBackstop(rt.store)
  const { seconds, frames } = walCheckpointMetrics(rt.metrics)
  let lastError: string | undefined
  return startCheckpointer(sqlite.name, {
    onCheckpoint(result) {
      seconds.observe(result.ms / 1000)
      frames.set(result.frames)
      lastError = undefined
    },
    onError(message) {
      // Once per kind of failure until a checkpoint succeeds again: the thread retries every 200 ms.
      if (message === lastError) return
      lastError = message
      rt.log.warn({ err: message }, 'WAL checkpoint failed; the service checkpoints on commit past the backstop meanwhile')
    },
  })
}
