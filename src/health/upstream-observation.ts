import { BroadcastChannel } from 'node:worker_threads'

/**
 * What the observation needs of the runtime. Not the Runtime type itself: the runtime records every provider request
 * through here (src/upstream/metrics.ts), and a module it imports must not import it back.
 */
export interface UpstreamObserverHost {
  config: { dataDir: string; databaseUrl: string }
  clock: { now(): number }
  onClose(fn: () => Promise<void> | void): void
}

/**
 * How long one outcome stands for the provider's state. Past it, with no fresher request, the provider
 * is `unknown` again: one 5xx an hour ago says nothing of now, and without a window a single failure kept
 * /readyz degraded until the next request — forever on a quiet instance. A minute spans the client's own
 * retries and a few call-queue passes, so a live outage stays visible while traffic lasts.
 */
export const UPSTREAM_EVIDENCE_MS = 60_000

/** What one request to the provider got: the answer's status, or status 0 and why no answer came. */
export interface UpstreamOutcome {
  status: number
  error?: string
}

export type UpstreamStatus = { state: 'up' } | { state: 'down'; error: string } | { state: 'unknown' }

/**
 * Down is a failure that is the provider's: no answer (refused, reset, timed out) or a 5xx — the same
 * failures the client retries. Any other answer, 4xx and 429 included, is the provider answering: a bad
 * request, a bad key or a rate limit says the provider is up.
 */
export function isUpstreamDown(outcome: UpstreamOutcome): boolean {
  return outcome.status === 0 || outcome.status >= 500
}

interface Observation {
  last: { up: true; at: number } | { up: false; error: string; at: number } | undefined
  channel: BroadcastChannel
  /** What this thread last told the others, and when (its clock): see noteUpstream. */
  posted: { up: boolean; at: number } | undefined
}

/** A thread repeats an unchanged state to the others at most this often (well inside UPSTREAM_EVIDENCE_MS). */
const REPOST_MS = 5_000

const observations = new WeakMap<UpstreamObserverHost, Observation>()

/**
 * Under `serve` the call queue, recipes and reconciliation run in the processing thread, with a runtime
 * of their own, while /readyz is answered by the main thread's: each thread's outcomes are shared with
 * the others serving the same data (a BroadcastChannel reaches every thread of this process, and only it).
 */
function channelName(rt: UpstreamObserverHost): string {
  return `switchboard:upstream-outcomes:${rt.config.dataDir}:${rt.config.databaseUrl}`
}

function record(observation: Observation, rt: UpstreamObserverHost, outcome: UpstreamOutcome): void {
  // Stamped on arrival with this runtime's clock: the threads' clocks need not agree.
  const at = rt.clock.now()
  observation.last = isUpstreamDown(outcome) ? { up: false, error: outcome.error ?? `HTTP ${outcome.status}`, at } : { up: true, at }
}

function observationOf(rt: UpstreamObserverHost): Observation {
  let observation = observations.get(rt)
  if (observation) return observation
  const channel = new BroadcastChannel(channelName(rt))
  // Listening must not keep a finished CLI command alive.
  channel.unref()
  const created: Observation = { last: undefined, channel, posted: undefined }
  channel.onmessage = (message: unknown) => {
    const data = (message as { data?: { status?: unknown; error?: unknown } }).data
    if (typeof data?.status !== 'number') return
    record(created, rt, { status: data.status, ...(typeof data.error === 'string' ? { error: data.error } : {}) })
  }
  rt.onClose(() => channel.close())
  observations.set(rt, created)
  return created
}

/**
 * Starts listening for the outcomes other threads observe. The main thread calls it when it serves
 * /readyz, before its processing thread starts: an outcome posted before anyone listens is not kept.
 */
export function watchUpstream(rt: UpstreamObserverHost): void {
  observationOf(rt)
}

/** Records one request's outcome (the proxy's, or any provider client's the runtime made). */
export function noteUpstream(rt: UpstreamObserverHost, outcome: UpstreamOutcome): void {
  const observation = observationOf(rt)
  record(observation, rt, outcome)
  // Told to the other threads when it changes, else every REPOST_MS: this runs on every proxied miss and every
  // queued call, and the others only need evidence fresher than UPSTREAM_EVIDENCE_MS.
  const up = !isUpstreamDown(outcome)
  const now = rt.clock.now()
  const posted = observation.posted
  if (posted && posted.up === up && now - posted.at < REPOST_MS) return
  observation.posted = { up, at: now }
  observation.channel.postMessage({ status: outcome.status, ...(outcome.error !== undefined ? { error: outcome.error } : {}) } satisfies UpstreamOutcome)
}

/** The latest outcome, if it is younger than UPSTREAM_EVIDENCE_MS on the runtime's clock; else unknown. */
export function upstreamStatus(rt: UpstreamObserverHost): UpstreamStatus {
  const last = observationOf(rt).last
  if (!last || rt.clock.now() - last.at > UPSTREAM_EVIDENCE_MS) return { state: 'unknown' }
  return last.up ? { state: 'up' } : { state: 'down', error: last.error }
}
