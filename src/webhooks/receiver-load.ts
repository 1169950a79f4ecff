import type { Runtime } from '../runtime.ts'

/**
 * Receiver first during a burst. The processing thread shares the machine's cores with the receiver; at
 * its lower priority (PROCESSING_NICE) it still takes every moment the receiver's threads wait, and on a
 * small machine it slowed the receiver's answers by a third during a burst. So while the receiver commits
 * more than PROCESSING_YIELD_ABOVE deliveries a second, the processing thread holds back its next batch of
 * webhook events, queued calls and deliveries to destinations — at most HOLD_MAX_MS in a row, then it runs
 * at least as long before it holds back again, so a stream that never slows still leaves processing half the
 * time. The receiver keeps a "busy until" time in memory shared with the thread; the thread only reads it.
 */

/** The window the receiver's rate is measured over. */
const WINDOW_MS = 250
/** How long "busy" lasts after a commit that found the rate above the threshold. */
const BUSY_FOR_MS = 100
/** The longest processing holds back in a row; it then runs at least this long before holding back again. */
export const HOLD_MAX_MS = 2_000
/** How often a held-back processing thread looks again. */
const RECHECK_MS = 20

export interface ReceiverLoad {
  /** Memory shared with the processing thread (a "busy until" epoch-ms time). */
  readonly shared: SharedArrayBuffer
  /** The receiver committed `deliveries` at `now` (epoch ms). */
  committed(deliveries: number, now: number): void
}

/** The receiver's side: tracks its commit rate and marks itself busy above `aboveRate` deliveries a second. */
export function trackReceiverLoad(aboveRate: number): ReceiverLoad {
  const shared = new SharedArrayBuffer(8)
  const busyUntil = new BigInt64Array(shared)
  const recent: Array<{ at: number; n: number }> = []
  let inWindow = 0
  return {
    shared,
    committed(deliveries, now) {
      if (aboveRate <= 0) return
      recent.push({ at: now, n: deliveries })
      inWindow += deliveries
      while (recent.length > 0 && recent[0]!.at <= now - WINDOW_MS) inWindow -= recent.shift()!.n
      if ((inWindow * 1000) / WINDOW_MS > aboveRate) Atomics.store(busyUntil, 0, BigInt(now + BUSY_FOR_MS))
    },
  }
}

export interface YieldGateOptions {
  now(): number
  sleep(ms: number): Promise<void>
  /** True once the thread is stopping: a held-back batch goes at once (shutdown does not wait out a burst). */
  stopping?(): boolean
}

/**
 * The processing side: resolves at once while the receiver is quiet, otherwise once it is (or after
 * HOLD_MAX_MS, after which the next HOLD_MAX_MS never wait).
 */
export function createYieldGate(shared: SharedArrayBuffer, options: YieldGateOptions): () => Promise<void> {
  const busyUntil = new BigInt64Array(shared)
  const busy = () => Number(Atomics.load(busyUntil, 0)) > options.now()
  let runUntil = 0
  return async () => {
    if (!busy() || options.now() < runUntil) return
    const started = options.now()
    while (busy() && !options.stopping?.()) {
      if (options.now() - started >= HOLD_MAX_MS) {
        runUntil = options.now() + HOLD_MAX_MS
        return
      }
      await options.sleep(RECHECK_MS)
    }
  }
}

const gates = new WeakMap<Runtime, () => Promise<void>>()

/**
 * Makes this runtime's webhook worker, call queue and delivery lanes wait at `gate` before each batch (the
 * processing thread sets it).
 */
export function setYieldGate(rt: Runtime, gate: () => Promise<void>): void {
  gates.set(rt, gate)
}

/** Waits while the receiver is busy, if this runtime yields to one (see setYieldGate). */
export function yieldToReceiver(rt: Runtime): Promise<void> | undefined {
  return gates.get(rt)?.()
}
