/**
 * How often the retention purges run (events, deliveries, recipes' queues and history), counted from the end of
 * the last run: each run deletes what expired since, a few minutes' worth in small paced statements.
 */
export const PURGE_EVERY_MS = 10 * 60_000

/**
 * How long one purge statement may hold the database, aimed for. One statement deleting an hour of a campaign's
 * events held SQLite's one write lock for seconds (200,000 events: 1–6 s, more with random ids, whose index
 * entries are spread over the whole index; a million: past the receiver's 5 s commit deadline, so webhooks were
 * answered 503 while it ran). Chunks sized to a few milliseconds keep a webhook's commit from waiting longer than
 * that; on Postgres short statements keep each transaction small for vacuum and replicas.
 */
export const PURGE_CHUNK_TARGET_MS = 4

/** Rows in the first chunk; later chunks are sized from the time the previous one took. */
const FIRST_CHUNK = 200
const MIN_CHUNK = 20
const MAX_CHUNK = 5_000
/**
 * After each chunk the purge waits 29 times as long as the chunk took (at most PAUSE_MAX_MS): a thirtieth of the
 * database's time at most. Measured at 1,000 events/s (`npm run bench -- ingest`, 200,000 events past the window
 * with random ids), the receiver's p99 with the purge running, against 4–17 ms with none: at a third of the time,
 * 45–70 ms (the purge wrote the log faster than the checkpoint thread could copy it; the log sat at its
 * 8,000-page backstop, and the receiver's commits ran checkpoints); at a tenth, 21–35 ms; at a twentieth, 15–21 ms;
 * at a thirtieth, 11–13 ms, deleting ~750 events a second (each ~30 µs of work: an entry in every index, several of
 * them on random keys). What is left is the purge holding the lock while the scheduler runs something else: its
 * thread runs at PROCESSING_NICE, below the receiver's, and the less of the time it holds the lock, the rarer that is.
 */
const PAUSE_FACTOR = 29
const PAUSE_MAX_MS = 250

/**
 * The longest one purge run goes on; what is left goes in the next run, PURGE_EVERY_MS after this one ends. A purge
 * that is behind thus deletes ~620 events with random ids a second, sustained, on the reference machine's disk.
 */
export const PURGE_RUN_MS = 50 * 60_000
/** The lease a purge holds while it runs (one replica at a time): longer than a run. */
export const PURGE_LEASE_MS = PURGE_RUN_MS + 10 * 60_000

export interface ChunkedDeletion {
  /** Rows deleted. */
  rows: number
  /** Stopped at the run's deadline, perhaps with rows still to delete (the next run goes on). */
  more: boolean
}

export interface DeleteInChunksOptions {
  /** A fixed chunk size instead of the timed one (tests). */
  chunk?: number
  /** When to stop, on `now`'s scale (default: PURGE_RUN_MS from the first chunk). */
  deadline?: number
  /** The time source for sizing chunks, pauses and the deadline (performance.now by default). */
  now?: () => number
  sleep?: (ms: number) => Promise<void>
  /** Aborted when the service stops: the run ends after the chunk under way (more: true). */
  signal?: AbortSignal
  /** Awaited before each chunk: the purges wait there while the receiver takes a burst (src/coordination/receiver-load.ts). */
  beforeChunk?: () => Promise<void> | undefined
}

/** The next chunk's size: scaled by how far the last one was from the target, at most doubling. */
export function nextChunkSize(limit: number, tookMs: number): number {
  const scaled = tookMs > 0 ? Math.floor((limit * PURGE_CHUNK_TARGET_MS) / tookMs) : limit * 2
  return Math.max(MIN_CHUNK, Math.min(MAX_CHUNK, limit * 2, scaled))
}

/**
 * Calls `deleteChunk(limit)` — one short statement or transaction that deletes at most `limit` rows and says how
 * many it deleted — until a call deletes fewer than `limit`, the deadline passes or the signal is aborted. Each chunk is sized to take
 * about PURGE_CHUNK_TARGET_MS and followed by a pause 29 times as long: other connections (the receiver's commits
 * above all) get the lock between chunks, and the log the purge writes stays within what checkpoints copy.
 */
export async function deleteInChunks(deleteChunk: (limit: number) => Promise<number>, options: DeleteInChunksOptions = {}): Promise<ChunkedDeletion> {
  const now = options.now ?? (() => performance.now())
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)))
  const deadline = options.deadline ?? now() + PURGE_RUN_MS
  let limit = options.chunk ?? FIRST_CHUNK
  let rows = 0
  while (now() < deadline && !options.signal?.aborted) {
    await options.beforeChunk?.()
    const started = now()
    const n = await deleteChunk(limit)
    rows += n
    if (n < limit) return { rows, more: false }
    const took = now() - started
    if (options.chunk === undefined) limit = nextChunkSize(limit, took)
    await sleep(Math.min(PAUSE_FACTOR * took, PAUSE_MAX_MS))
  }
  return { rows, more: true }
}

/** Options for the several deletions of one purge run: one deadline for all of them. */
export function purgeRun(options: DeleteInChunksOptions = {}): DeleteInChunksOptions {
  const now = options.now ?? (() => performance.now())
  return { ...options, now, deadline: options.deadline ?? now() + PURGE_RUN_MS }
}
