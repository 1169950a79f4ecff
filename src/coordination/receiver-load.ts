import { performance } from 'node:perf_hooks'
import type { Runtime } from '../runtime.ts'

/**
 * Receiver first during a burst. The processing thread shares the machine's cores with the receiver; at
 * its lower priority (PROCESSING_NICE) it still takes every moment the receiver's threads wait, and on a
 * small machine it slowed the receiver's answers by a third during a burst. So while the receiver is busy,
 * the processing thread holds back its next batch of webhook events, queued calls and deliveries to
 * destinations — at most HOLD_MAX_MS in a row, then it runs at least as long before it holds back again, so a
 * stream that never slows still leaves processing half the time. The receiver keeps a "busy until" time in
 * memory shared with the thread; the thread only reads it.
 *
 * Busy is either of two things: the receiver committing more than PROCESSING_YIELD_ABOVE deliveries a second,
 * or more than half that while its event loop is busy for LOOP_BUSY_SHARE of the last window. On a slow or
 * crowded host a burst saturates the receiver well below the rate a fast one reaches (two cores at a third of
 * their usual speed: the receiver's loop 84–100 % busy through a 15,000-event burst at 2,000–4,800 deliveries a
 * second, 48–81 % at a steady 1,000 a second). The rate floor matters: in the pipeline benchmark's real flow the
 * loop was 90–100 % busy relaying processing's own calls to an in-process sandbox at 120–240 deliveries a
 * second, and holding processing back there delayed the last follow-up by the whole hold.
 */

/** The window the receiver's rate is measured over. */
const WINDOW_MS = 250
/** How long "busy" lasts after a commit that found the rate above the threshold. */
const BUSY_FOR_MS = 100
/** The share of a window the receiver's event loop must be busy for the receiver to count as busy. */
export const LOOP_BUSY_SHARE = 0.9
/**
 * The longest processing holds back in a row; it then runs at least this long before holding back again.
 * Long enough for a campaign's closing burst (30,000 events in ~5 s on two cores): at 2 s, a burst on a slow
 * host outlasted the hold and processing took a core back from the receiver for the rest of it.
 */
export const HOLD_MAX_MS = 10_000
/** How often a held-back processing thread looks again. */
const RECHECK_MS = 10
/**
 * A burst is over once the receiver has committed nothing for this long and is not writing a batch, whatever its
 * "busy until" says: busy lasts BUSY_FOR_MS past a fast commit and a window past a saturated loop's look, so
 * processing waited up to 350 ms after the last delivery of a burst — a tenth of the end-to-end time of a
 * 15,000-event burst. At the rates that make the receiver busy (1,500 deliveries a second and up) its group
 * commits come every few milliseconds; a gap of 30 ms with no batch being written is deliveries stopping (or the
 * host stalling every thread alike). A batch still being written — a slow disk's fsync can take longer than
 * that — keeps processing held.
 */
export const QUIET_MS = 30
/** The receiver counts as taking deliveries for this long after a commit (for the claim size). */
export const RECEIVING_FOR_MS = 250
/**
 * The most events the webhook worker claims at once while the receiver takes deliveries. Processing's write
 * transactions then hold SQLite's one write lock briefly, so the receiver's commits wait less behind them.
 * Measured in `pipeline` at 1,000 deliveries a second while the backlog drained (six alternated pairs), as a
 * quarter of the then 200-event batch: p50 lower in all six, p99 median 34 against 39 ms. The drain with no
 * deliveries arriving keeps the whole batch: in quarter batches it was 15 % slower.
 */
const RECEIVING_BATCH = 50
/** The furthest ahead of its clock the receiver ever marks itself busy; a mark further ahead is a clock stepped back. */
const FURTHEST_MARK_MS = WINDOW_MS + BUSY_FOR_MS

export interface ReceiverLoad {
  /** Memory shared with the processing thread (a "busy until" and a "last commit" epoch-ms time). */
  readonly shared: SharedArrayBuffer
  /** The receiver committed `deliveries` at `now` (epoch ms). */
  committed(deliveries: number, now: number): void
  /** The receiver started (`true`) or finished (`false`) writing a batch of deliveries at `now` (epoch ms). */
  writing(on: boolean, now: number): void
}

export interface ReceiverLoadOptions {
  /**
   * The share of the time since its previous call that the receiver's event loop was busy (0–1). Defaults to
   * Node's event-loop utilization of the calling thread; tests pass their own.
   */
  loopBusyShare?: () => number
}

/**
 * The receiver's side: tracks its commit rate and its event loop, and marks itself busy above `aboveRate`
 * deliveries a second, or above half that while its loop is busy (`0` never marks it busy: the gate is off).
 */
export function trackReceiverLoad(aboveRate: number, options: ReceiverLoadOptions = {}): ReceiverLoad {
  const shared = new SharedArrayBuffer(24)
  // [0]: busy until, [1]: the last commit, [2]: since when a batch is being written, 0 when none (epoch ms).
  const slots = new BigInt64Array(shared)
  const loopBusyShare = options.loopBusyShare ?? eventLoopBusyShare()
  const recent: Array<{ at: number; n: number }> = []
  let inWindow = 0
  let loopLookedAt = Number.NEGATIVE_INFINITY
  let until = 0
  const busyTill = (at: number) => {
    if (at <= until) return
    until = at
    Atomics.store(slots, 0, BigInt(at))
  }
  return {
    shared,
    committed(deliveries, now) {
      if (aboveRate <= 0) return
      Atomics.store(slots, 1, BigInt(now))
      // The clock stepped back (NTP): the window's commits, the loop's last look and a busy mark made from them lie in
      // its future, and would count for the length of the step — processing held back all that time.
      if (recent.length > 0 && recent[recent.length - 1]!.at > now) {
        recent.length = 0
        inWindow = 0
        loopLookedAt = Number.NEGATIVE_INFINITY
        until = 0
        Atomics.store(slots, 0, 0n)
      }
      recent.push({ at: now, n: deliveries })
      inWindow += deliveries
      while (recent.length > 0 && recent[0]!.at <= now - WINDOW_MS) inWindow -= recent.shift()!.n
      if ((inWindow * 1000) / WINDOW_MS > aboveRate) busyTill(now + BUSY_FOR_MS)
      // Once a window: a loop busy through it while the receiver takes at least half the threshold's rate stays
      // busy until the next look, and a little after. Without the rate, a loop kept busy by other work (the proxy
      // relaying processing's own calls, an in-process sandbox) would hold back the processing that feeds it.
      if (now - loopLookedAt >= WINDOW_MS) {
        const share = loopBusyShare()
        const receiving = (inWindow * 1000) / WINDOW_MS > aboveRate / 2
        if (loopLookedAt !== Number.NEGATIVE_INFINITY && receiving && share >= LOOP_BUSY_SHARE) busyTill(now + WINDOW_MS + BUSY_FOR_MS)
        loopLookedAt = now
      }
    },
    writing(on, now) {
      if (aboveRate <= 0) return
      Atomics.store(slots, 2, on ? BigInt(now) : 0n)
    },
  }
}

/** The calling thread's event-loop utilization since the previous call. */
function eventLoopBusyShare(): () => number {
  let last = performance.eventLoopUtilization()
  return () => {
    const current = performance.eventLoopUtilization()
    const share = performance.eventLoopUtilization(current, last).utilization
    last = current
    return share
  }
}

export interface YieldGateOptions {
  now(): number
  sleep(ms: number): Promise<void>
  /** True once the thread is stopping: a held-back batch goes at once (shutdown does not wait out a burst). */
  stopping?(): boolean
  /**
   * Told when processing starts holding back (`true`) and when it stops (`false`, with how long it held). Several
   * parts of processing wait at the gate together; one hold lasts from the first of them waiting to the last going.
   */
  onHold?(holding: boolean, heldMs: number): void
}

/**
 * The processing side: resolves at once while the receiver is quiet, otherwise once it is — its "busy until"
 * passed, or no commit for QUIET_MS — or after HOLD_MAX_MS, after which the next HOLD_MAX_MS never wait.
 */
export function createYieldGate(shared: SharedArrayBuffer, options: YieldGateOptions): () => Promise<void> {
  const slots = new BigInt64Array(shared)
  const busy = () => {
    const now = options.now()
    const until = Number(Atomics.load(slots, 0))
    // Passed — or further ahead than the receiver ever marks, the clock having stepped back since (NTP).
    if (until <= now || until > now + FURTHEST_MARK_MS + 1_000) return false
    // Quiet: nothing committed for QUIET_MS and nothing being written (a slow commit is deliveries still arriving).
    return Number(Atomics.load(slots, 1)) > now - QUIET_MS || Atomics.load(slots, 2) !== 0n
  }
  let runUntil = 0
  let waiting = 0
  let holdingSince = 0
  return async () => {
    if (!busy() || options.now() < runUntil) return
    const started = options.now()
    if (waiting++ === 0) {
      holdingSince = started
      options.onHold?.(true, 0)
    }
    try {
      while (busy() && !options.stopping?.()) {
        const held = options.now() - started
        // A negative hold is the clock stepped back: measured from there it would last the whole step.
        if (held >= HOLD_MAX_MS || held < 0) {
          runUntil = options.now() + HOLD_MAX_MS
          return
        }
        await options.sleep(RECHECK_MS)
      }
    } finally {
      if (--waiting === 0) options.onHold?.(false, options.now() - holdingSince)
    }
  }
}

/** The processing side: whether the receiver committed deliveries within the last RECEIVING_FOR_MS. */
export function createReceivingCheck(shared: SharedArrayBuffer, now: () => number): () => boolean {
  const slots = new BigInt64Array(shared)
  return () => Number(Atomics.load(slots, 1)) > now() - RECEIVING_FOR_MS
}

const gates = new WeakMap<Runtime, () => Promise<void>>()
const receivingChecks = new WeakMap<Runtime, () => boolean>()

/** Makes this runtime's webhook worker claim smaller batches while `receiving()` (the processing thread sets it). */
export function setReceivingCheck(rt: Runtime, receiving: () => boolean): void {
  receivingChecks.set(rt, receiving)
}

/** The webhook worker's next claim: `full`, or at most RECEIVING_BATCH while the receiver this runtime yields to takes deliveries. */
export function claimSize(rt: Runtime, full: number): number {
  return receivingChecks.get(rt)?.() ? Math.min(full, RECEIVING_BATCH) : full
}

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
