import { createLogThrottle } from '../utils/log-throttle.ts'
import type { Runtime } from '../runtime.ts'
import { createCircuitBreaker, type BreakerOptions } from './circuit-breaker.ts'
import type { DestinationConfig } from '../config/destinations.ts'
import { createAgents, createCancelGroup, sendOnce, type SendResult } from './http-send.ts'
import { destinationMetrics, type DestinationMetrics } from './metrics.ts'
import { classify } from './outcome.ts'
import { claimDeliveries, onEnqueued, orderQueuedDeliveries, releaseClaims, type ClaimedDelivery } from './outbox.ts'
import { createAttemptRecorder, type AttemptRecorder } from './recorder.ts'
import { eventTypeHeader, signedHeaders, signingKeys } from './sign.ts'
import { shownUrl } from '../utils/shown-url.ts'
import { disableDestination, disabledDestinations } from './state.ts'
import { clearPause, pauseStillRecorded, recordPause } from './pauses.ts'
import { yieldToReceiver } from '../coordination/receiver-load.ts'

/** The sweep picks up retries that fell due, replays, and rows other replicas enqueued. */
export const SWEEP_MS = 250
/** A claim outlives the request's own timeout by this much, so it never lapses while a request is out. */
const CLAIM_GRACE_MS = 15_000
/**
 * A claimed row starts only with at least its request's timeout and this much more left of its claim (the outcome's
 * commit); otherwise it is given back.
 */
const START_MARGIN_MS = 5_000
/** Rows claimed beyond the free slots, in multiples of the concurrency: fewer, larger claim transactions. */
const CLAIM_AHEAD = 8
/** How often a lane re-reads whether its destination was disabled or re-enabled (by any replica). */
const STATE_CHECK_MS = 5_000
/**
 * How long a stop waits for the requests in flight to be answered (real time: a stop is the process manager's clock),
 * capped by the destination's own timeout; what is still out then is cut, its claim given back, and sent again.
 */
export const STOP_DRAIN_MS = 5_000

const MISSING_BODY: SendResult = { status: null, latencyMs: 0, error: 'the event body is missing (destination_payloads); not sent', response: '' }

export interface DeliveryWorker {
  /** Looks for due deliveries now. */
  wake(): void
  /** Resolves when no lane has a request in flight, an outcome unrecorded or a claim running. */
  idle(): Promise<void>
  stop(): Promise<void>
  /** Destinations whose circuit breaker pauses them in this replica. */
  paused(): string[]
}

export interface DeliveryWorkerOptions {
  breaker?: BreakerOptions
  /** How long a stop waits for the requests in flight (default STOP_DRAIN_MS; capped by each destination's timeout). */
  stopDrainMs?: number
}

/** What a failed attempt's log line says about it (built only for the outcomes that log). */
function logContext(row: ClaimedDelivery, sent: SendResult) {
  return { delivery_id: row.id, event_id: row.event_id, attempt: row.attempts + 1, status: sent.status, latency_ms: sent.latencyMs }
}

interface Lane {
  pump(): void
  busy(): boolean
  settle(): Promise<void>
  paused(): boolean
  stop(): Promise<void>
}

/**
 * One lane per destination, each with its own claims, concurrency limit, keep-alive connections and
 * circuit breaker, so a slow or failing destination only ever occupies its own lane.
 */
function startLane(rt: Runtime, destination: DestinationConfig, owner: string, metrics: DestinationMetrics, recorder: AttemptRecorder, options: DeliveryWorkerOptions): Lane {
  const keys = signingKeys(destination.secret)
  const agents = createAgents(destination.concurrency, rt.config.destinations.allowPrivate)
  const breaker = createCircuitBreaker(options.breaker)
  const claimMs = destination.timeoutMs + CLAIM_GRACE_MS
  const labels = { destination: destination.name }
  const log = rt.log.child({ destination: destination.name })
  const claimFailureLogs = createLogThrottle(10_000)
  const buffer: ClaimedDelivery[] = []
  const running = new Set<Promise<void>>()
  let pumping: Promise<void> | undefined
  let again = false
  let probeInFlight = false
  let disabled = false
  let stateCheckedAt = -Infinity
  let disableSeq = 0
  /** This lane's own 410 being recorded: until it is committed, a read of the shared state cannot see it. */
  let disabling = 0
  let stopped = false
  // A stop cuts what is still out after STOP_DRAIN_MS instead of waiting out the requests' timeouts; their claims are
  // given back.
  const shutdown = createCancelGroup()
  // Label sets bound once: prom-client hashes the labels on every call otherwise.
  const attemptSeconds = metrics.attemptSeconds.labels(labels)
  const pausedGauge = metrics.paused.labels(labels)
  let shownPaused = -1
  const deliveriesBy = new Map<string, { inc(): void }>()
  const countDelivery = (result: string) => {
    let counter = deliveriesBy.get(result)
    if (!counter) deliveriesBy.set(result, (counter = metrics.deliveries.labels({ ...labels, result })))
    counter.inc()
  }

  /**
   * Tells the other pages (the list, the dashboard: src/destinations/pauses.ts) when this lane's breaker starts a pause
   * and when a delivery ends it. The writes go one after the other, so a pause and its end are never recorded the
   * wrong way round.
   */
  let pauseWrites: Promise<void> = Promise.resolve()
  /** This lane's pause is recorded (its row written): an operator ends it by removing the row (`endPauses`). */
  let pauseRecorded = false
  const oneLine = (text: string) => (text.length > 300 ? `${text.slice(0, 299)}…` : text)
  function notePause(pausedBefore: number, error: string | null): void {
    const until = breaker.pausedUntil()
    let write: (() => Promise<void>) | undefined
    if (until > pausedBefore) {
      const reason = `${breaker.failures()} failed attempts in a row; the last: ${oneLine(error ?? 'failed')}`
      log.warn({ paused_until: new Date(until).toISOString(), err: error }, 'destination paused by its circuit breaker: failing deliveries wait in the outbox until a probe gets through')
      write = async () => {
        await recordPause(rt, destination.name, { until, reason })
        pauseRecorded = true
      }
    } else if (until === 0 && pausedBefore > 0) {
      log.info('destination resumed: a delivery got through after its circuit breaker paused it')
      write = async () => {
        pauseRecorded = false
        await clearPause(rt, destination.name)
      }
    }
    if (write) pauseWrites = pauseWrites.then(write).catch((e) => log.warn({ err: (e as Error).message }, 'could not record the circuit breaker\'s pause for the dashboard'))
  }

  async function giveBack(rows: ClaimedDelivery[]): Promise<void> {
    await releaseClaims(rt, owner, rows.map((r) => r.id)).catch((error) => log.warn({ err: (error as Error).message }, 'could not release delivery claims; they lapse on their own'))
  }

  async function refreshState(now: number): Promise<void> {
    if (now - stateCheckedAt < STATE_CHECK_MS) return
    stateCheckedAt = now
    // Paused, and an operator ended the pause (its record gone: `destinations enable`, a replay of its failures): the
    // next delivery goes out as the probe now, not when the pause (up to 10 minutes) runs out.
    if (pauseRecorded && breaker.state(now) === 'open' && !(await pauseStillRecorded(rt, destination.name))) {
      pauseRecorded = false
      breaker.resume()
      log.info('destination pause ended by hand: the next delivery goes out as a probe')
    }
    // While this lane's own 410 is being written, the database does not say so yet: keep the local truth. (Read
    // then, on another connection, the state said "enabled" and the lane sent on until the next check.)
    if (disabling > 0) return
    const seq = disableSeq
    const off = (await disabledDestinations(rt)).has(destination.name)
    // A read that overlapped this lane's own 410 (started before it) is stale too.
    if (seq !== disableSeq) return
    disabled = off
    metrics.disabled.set(labels, disabled ? 1 : 0)
  }

  /**
   * Takes out of the buffer the rows with too little of their claim left to start at `now` — less than a request's
   * timeout and a commit's allowance — to be given back rather than risk a second replica sending them too. The
   * buffer is in claim order, so they are its head (a pass runs per delivery: no scan of the whole buffer).
   */
  function spentClaims(now: number): ClaimedDelivery[] {
    let spent = 0
    while (spent < buffer.length && (buffer[spent]!.claimed_until ?? 0) - now < destination.timeoutMs + START_MARGIN_MS) spent++
    return buffer.splice(0, spent)
  }

  function start(row: ClaimedDelivery, probe: boolean): void {
    if (probe) probeInFlight = true
    const task = (async () => {
      const startedAt = rt.clock.now()
      // An event body is never empty: an empty one is a body lost from destination_payloads, and is a failed
      // attempt (kept, retried, dead-lettered, replayable) rather than an empty POST the receiver would accept.
      let sent: SendResult
      try {
        sent = row.payload
          ? await sendOnce({
              url: destination.url,
              body: row.payload,
              headers: { ...destination.headers, ...eventTypeHeader(row.event_type), ...signedHeaders(keys, row.id, startedAt, row.payload) },
              timeoutMs: destination.timeoutMs,
              allowPrivate: rt.config.destinations.allowPrivate,
              allowHttp: destination.allowHttp,
              followRedirects: destination.followRedirects,
              clock: rt.clock,
              agents,
              cancel: shutdown,
            })
          : MISSING_BODY
      } catch (error) {
        // sendOnce never throws by design; should a bug make it, the attempt is still a recorded failure (retried,
        // then dead-lettered) rather than an outcome never written, which would bring the delivery back after
        // every claim lapse, forever.
        sent = { status: null, latencyMs: 0, error: `delivery attempt crashed: ${(error as Error).message}`, response: '' }
      }
      if (sent.aborted) return giveBack([row])
      const now = rt.clock.now()
      const outcome = classify(destination, row.round_attempts, sent, now, rt.random.next)
      const pausedBefore = breaker.pausedUntil()
      if (outcome.result === 'delivered') breaker.success()
      else if (outcome.result !== 'disabled') breaker.failure(now)
      notePause(pausedBefore, outcome.error)
      countDelivery(outcome.result)
      attemptSeconds.observe(sent.latencyMs / 1000)
      if (outcome.result === 'disabled') {
        disabled = true
        disableSeq++
        disabling++
        metrics.disabled.set(labels, 1)
        log.error(logContext(row, sent), 'destination answered 410 Gone: disabled until `destinations enable`')
        await disableDestination(rt, destination.name, `410 Gone from ${shownUrl(destination.url)}`)
          .catch((error) => log.error({ err: (error as Error).message }, 'could not record the disabled destination'))
          .finally(() => disabling--)
      } else if (outcome.result === 'dead') log.error({ ...logContext(row, sent), err: outcome.error }, 'delivery dead-lettered: retry schedule exhausted')
      else if (outcome.result === 'retry') log.warn({ ...logContext(row, sent), err: outcome.error, next_attempt_at: outcome.nextAttemptAt }, 'delivery attempt failed; will retry')
      recorder.push({
        row,
        result: outcome.result,
        startedAt,
        latencyMs: sent.latencyMs,
        status: sent.status,
        error: outcome.error,
        response: sent.response || null,
        nextAttemptAt: outcome.nextAttemptAt,
        countsInRound: outcome.countsInRound,
      })
    })()
      .catch((error) => log.error({ delivery_id: row.id, err: (error as Error).message }, 'delivery attempt crashed'))
      .finally(() => {
        if (probe) probeInFlight = false
        running.delete(task)
        pump()
      })
    running.add(task)
  }

  async function pass(): Promise<void> {
    for (;;) {
      again = false
      // In the processing thread, a burst at the receiver goes first (src/coordination/receiver-load.ts).
      await yieldToReceiver(rt)
      await refreshState(rt.clock.now())
      // Read after the awaits: a pass that waited on the database must not judge claims by an earlier moment.
      const now = rt.clock.now()
      const state = breaker.state(now)
      // Set on a change only: a gauge set hashes its labels, and a pass runs every few deliveries.
      const paused = state === 'closed' ? 0 : 1
      if (paused !== shownPaused) pausedGauge.set((shownPaused = paused))
      if (disabled || state === 'open' || stopped) {
        if (buffer.length) await giveBack(buffer.splice(0))
        return
      }
      const slots = state === 'closed' ? destination.concurrency - running.size : probeInFlight ? 0 : 1
      if (slots <= 0) return
      const stale = spentClaims(now)
      if (stale.length) await giveBack(stale)
      if (buffer.length < slots) {
        // Claim ahead (one transaction per several deliveries), but only one at a time while probing.
        const want = state === 'closed' ? slots + CLAIM_AHEAD * destination.concurrency - buffer.length : 1 - buffer.length
        buffer.push(...(await claimDeliveries(rt, destination, owner, want, claimMs)))
      }
      // Judged again by the time the claim returned, with no await before the rows start: the claim itself can
      // wait seconds (SQLite's write lock, a slow round trip to Postgres), and a row started on the time read
      // before it could see its claim lapse mid-request and another replica send it too.
      const late = spentClaims(rt.clock.now())
      const starting = buffer.splice(0, Math.min(slots, buffer.length))
      for (const row of starting) start(row, state === 'half-open')
      if (late.length) await giveBack(late)
      if (starting.length === 0) return
      if (!again && running.size >= destination.concurrency) return
    }
  }

  function pump(): void {
    if (stopped) return
    if (pumping) {
      again = true
      return
    }
    pumping = pass()
      .catch((error) => {
        // Each pump fails alike while the database does (a full disk, an outage): a line every 10 s, not every pump.
        const { log: now, suppressed } = claimFailureLogs.take('claim', rt.clock.now())
        if (now) log.error({ err: (error as Error).message, ...(suppressed ? { not_logged_since: suppressed } : {}) }, 'destination lane could not claim deliveries')
      })
      .finally(() => {
        pumping = undefined
        if (again && !stopped) pump()
      })
  }

  return {
    pump,
    busy: () => running.size > 0 || Boolean(pumping),
    async settle() {
      await Promise.all([...running])
      await pumping
    },
    paused: () => breaker.state(rt.clock.now()) !== 'closed',
    async stop() {
      stopped = true
      // The requests in flight are answered first, for a while: cut at once, each was sent again after the restart
      // (its claim given back) though its destination had it — a duplicate of up to `concurrency` deliveries a
      // destination at every deploy.
      await settledWithin([...running], Math.min(destination.timeoutMs, options.stopDrainMs ?? STOP_DRAIN_MS))
      shutdown.cancelAll()
      await pumping
      await Promise.all([...running])
      await recorder.settle()
      await pauseWrites
      // This replica pauses nothing any more: its record kept the destination `paused` on the pages (the dashboard
      // offering Resume) while the next process, its breaker closed, delivered — for up to the pause's 10 minutes.
      if (pauseRecorded) await clearPause(rt, destination.name).catch((e) => log.warn({ err: (e as Error).message }, 'could not clear the circuit breaker\'s pause record; it is shown until it ends'))
      if (buffer.length) await giveBack(buffer.splice(0))
      await agents.close()
    },
  }
}

/**
 * The delivery worker: a lane per configured destination, woken when rows are enqueued and by a sweep on
 * the runtime's clock. Claims make it safe to run one per replica.
 */
export function startDeliveryWorker(rt: Runtime, options: DeliveryWorkerOptions = {}): DeliveryWorker {
  const owner = `${rt.instanceId}:destinations`
  const metrics = destinationMetrics(rt)
  let stopped = false
  const recorder = createAttemptRecorder(rt, owner, () => wake())
  const lanes = new Map(rt.config.destinations.list.map((d) => [d.name, startLane(rt, d, owner, metrics, recorder, options)]))
  let cancelSweep: (() => void) | undefined
  // Nothing is claimed until the backlog of ordered destinations is in order (tried again each sweep if it fails).
  let ready = false
  let preparing: Promise<void> | undefined
  let prepareFailed = false
  const wake = () => {
    if (stopped || !ready) return
    for (const lane of lanes.values()) lane.pump()
  }
  const prepare = () =>
    (preparing ??= orderQueuedDeliveries(rt)
      .then(
        (changed) => {
          if (changed > 0) rt.log.info({ deliveries: changed }, 'queued deliveries of ordered destinations now keep their conversations\' order')
          ready = true
          wake()
        },
        (error) => {
          // Once, not every sweep while the database is away (the lanes' own claims would fail meanwhile too).
          if (!prepareFailed) rt.log.warn({ err: (error as Error).message }, 'could not put the queued deliveries of ordered destinations in order; nothing is sent until it can (retrying every sweep)')
          prepareFailed = true
        },
      )
      .finally(() => (preparing = undefined)))
  const sweep = () => {
    if (stopped) return
    if (ready) wake()
    else void prepare()
    cancelSweep = rt.clock.setTimeout(sweep, SWEEP_MS)
  }
  onEnqueued(rt, wake)
  sweep()
  return {
    wake,
    async idle() {
      await preparing
      for (let i = 0; i < 100 && (recorder.busy() || [...lanes.values()].some((l) => l.busy())); i++) {
        await Promise.all([...lanes.values()].map((l) => l.settle()))
        await recorder.settle()
      }
    },
    paused: () => [...lanes].filter(([, l]) => l.paused()).map(([name]) => name),
    async stop() {
      stopped = true
      cancelSweep?.()
      onEnqueued(rt, undefined)
      // Outcomes being written again give up now rather than hold the stop for their tries (their claims lapse).
      recorder.stop()
      await preparing
      await Promise.all([...lanes.values()].map((l) => l.stop()))
    },
  }
}

/** Waits until every one of `tasks` has settled, or `ms` of real time, whichever comes first. */
async function settledWithin(tasks: Promise<unknown>[], ms: number): Promise<void> {
  if (tasks.length === 0) return
  let timer: NodeJS.Timeout | undefined
  await Promise.race([Promise.allSettled(tasks), new Promise((resolve) => (timer = setTimeout(resolve, ms)))])
  clearTimeout(timer)
}
