import { Gauge } from 'prom-client'
import type { Runtime } from './runtime.ts'
import { callMetrics, callQueueDepth } from './calls/metrics.ts'
import { destinationBacklogs, type DestinationBacklog } from './destinations/deliveries.ts'
import { pendingFires } from './recipes/claims.ts'
import { recipeMetrics } from './recipes/metrics.ts'
import { inboxBacklog, type Backlog } from './webhooks/backlog.ts'

/**
 * The gauges this module counts on the main thread while the processing thread does not report (busy, restarting):
 * a busy thread's last answer for them is left out of /metrics then (src/processing-host.ts), or they would be summed.
 */
export const BACKLOG_GAUGES: ReadonlySet<string> = new Set([
  'switchboard_events_pending',
  'switchboard_events_oldest_pending_age_seconds',
  'switchboard_recipe_events_queued',
  'switchboard_recipe_events_oldest_age_seconds',
  'switchboard_destination_queue_depth',
  'switchboard_destination_oldest_undelivered_seconds',
])

export interface BacklogMetricsOptions {
  /** The `role` label: the role of the process that answers. */
  role(): string
  /**
   * True while another thread of this process reports the backlog (`serve`'s processing thread, into the
   * registry /metrics sums with this one): these gauges then stay empty rather than count it twice.
   */
  reportedElsewhere?(): boolean
  /**
   * Count at most this many events (`switchboard_events_pending` then reads the cap): on the receiver's event
   * loop, where counting a backlog of 900,000 on SQLite held every request up for ~25 ms a scrape.
   */
  countUpTo?: number
  /**
   * Whether to count the queues processing works through here — the recipe queues (`switchboard_recipe_events_queued`,
   * a GROUP BY over every queued event) and the destinations' outboxes: where processing runs (default), not on a
   * receiver's loop that has a processing thread or worker to report them.
   */
  processingQueues?(): boolean
  /**
   * Reuse a count of the recipe queues and outboxes for this long (default: count at every scrape). On the receiver's
   * loop, counting them while the processing thread is too busy to answer took ~15 ms for 30,000 queued recipe events
   * and ~7 ms for 100,000 waiting deliveries, at every scrape, while webhooks waited.
   */
  queuesMaxAgeMs?(): number
}

/** `read`, its answer reused for `maxAgeMs()` from when it was asked (a failure is not reused; 0: read every time). */
function reusedFor<T>(rt: Runtime, maxAgeMs: () => number, read: () => Promise<T>): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | undefined
  return () => {
    const now = rt.clock.now()
    if (last && now - last.at < maxAgeMs()) return last.value
    const asked = { at: now, value: read() }
    last = asked
    asked.value.catch(() => {
      if (last === asked) last = undefined
    })
    return asked.value
  }
}

/**
 * Backlog gauges, read from the database at scrape time: the inbox's pending events and their oldest's age, recipe
 * queues, each destination's outbox. A backlog is counted in one place per process: /metrics sums the main thread's
 * registry with the processing thread's (src/processing-host.ts), and a gauge both counted showed it twice. Each
 * gauge reads in its own collect, so a scrape shows what the database holds now (the recipe queues were set from
 * another gauge's collect, and so showed the previous scrape's figures).
 */
export function registerBacklogMetrics(rt: Runtime, options: BacklogMetricsOptions): void {
  if (rt.metrics.getSingleMetric('switchboard_events_pending')) return
  // Registered up front so every series is listed (at zero) before its first sample.
  recipeMetrics(rt.metrics)
  // The paced queue runs where processing does: a receiver's /metrics listed its depth as a 0 nothing ever set.
  if (options.role() !== 'receiver') {
    callMetrics(rt.metrics)
    callQueueDepth(rt.metrics)
  }
  // One read of the backlog for both gauges of a scrape (prom-client collects them together).
  let reading: Promise<Backlog | undefined> | undefined
  const backlog = () => {
    reading ??= inboxBacklog(rt, { countUpTo: options.countUpTo })
      .catch(() => undefined)
      .finally(() => setImmediate(() => (reading = undefined)))
    return reading
  }
  const registers = [rt.metrics]
  const queuesMaxAgeMs = () => options.queuesMaxAgeMs?.() ?? 0
  const readFires = reusedFor(rt, queuesMaxAgeMs, () => pendingFires(rt))
  // The queues processing works through: counted where it runs, and only there.
  const queuesCountedHere = () => !options.reportedElsewhere?.() && (options.processingQueues?.() ?? true)
  const backlogGauge = (name: string, help: string, value: (b: Backlog) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['role'],
      registers,
      async collect() {
        this.reset()
        if (options.reportedElsewhere?.()) return
        const b = await backlog()
        if (b) this.set({ role: options.role() }, value(b))
      },
    })
  backlogGauge('switchboard_events_pending', 'Stored events not yet processed (pending, or failed awaiting a retry)', (b) => b.pending)
  backlogGauge('switchboard_events_oldest_pending_age_seconds', 'Age of the oldest unprocessed event', (b) => b.oldestAgeMs / 1000)
  new Gauge({
    name: 'switchboard_recipe_events_queued',
    help: 'Events queued for a recipe and not yet run',
    labelNames: ['recipe'],
    registers,
    async collect() {
      this.reset()
      if (!queuesCountedHere()) return
      for (const r of await readFires().catch(() => [])) this.set({ recipe: r.recipe }, r.n)
    },
  })
  // `/readyz` and `switchboard_events_oldest_pending_age_seconds` watch the inbox; a recipe whose queue stands still (a
  // run that hangs until its time limit, over and over) shows here.
  new Gauge({
    name: 'switchboard_recipe_events_oldest_age_seconds',
    help: 'Age of the oldest event queued for a recipe and not yet run (waiting, or failed and due again), per recipe',
    labelNames: ['recipe'],
    registers,
    async collect() {
      this.reset()
      if (!queuesCountedHere()) return
      const now = rt.clock.now()
      for (const r of await readFires().catch(() => [])) if (r.oldest !== null) this.set({ recipe: r.recipe }, Math.max(0, (now - r.oldest) / 1000))
    },
  })
  // One read of the outboxes for both of their gauges, as for the inbox's.
  let outboxes: Promise<Map<string, DestinationBacklog>> | undefined
  const countOutboxes = reusedFor(rt, queuesMaxAgeMs, () => destinationBacklogs(rt))
  const readOutboxes = () => {
    outboxes ??= countOutboxes()
      .catch(() => new Map<string, DestinationBacklog>())
      .finally(() => setImmediate(() => (outboxes = undefined)))
    return outboxes
  }
  const outboxGauge = (name: string, help: string, value: (b: DestinationBacklog | undefined, now: number) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['destination'],
      registers,
      async collect() {
        this.reset()
        if (!queuesCountedHere()) return
        const backlogs = await readOutboxes()
        const now = rt.clock.now()
        // Configured destinations show 0 when nothing waits; one removed from the config shows while rows remain.
        for (const destination of new Set([...rt.config.destinations.list.map((d) => d.name), ...backlogs.keys()])) {
          this.set({ destination }, value(backlogs.get(destination), now))
        }
      },
    })
  outboxGauge('switchboard_destination_queue_depth', 'Deliveries not yet delivered (waiting or retrying), per destination', (b) => b?.depth ?? 0)
  outboxGauge('switchboard_destination_oldest_undelivered_seconds', 'Age of the oldest delivery not yet delivered, per destination (0 when none)', (b, now) =>
    b?.oldest == null ? 0 : Math.max(0, (now - b.oldest) / 1000),
  )
}
