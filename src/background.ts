import type { Runtime } from './runtime.ts'
import { startCallQueue } from './calls/call-queue.ts'
import { startDestinations } from './destinations/index.ts'
import { registerConsumers } from './pipeline.ts'
import { startProxyMaintenance } from './proxy/mount.ts'
import { startRecipes } from './recipes/background.ts'
import { recipeEngineFor } from './recipes/engine.ts'
import { startMailOutbox } from './reports/mail-outbox.ts'
import { startContactKeyFill } from './campaigns/contact-key-fill.ts'
import { startWebhookWorkers } from './webhooks/index.ts'
import { startInstanceRegistry } from './instances.ts'
import { setProcessedElsewhere } from './coordination/processing-task.ts'
import { registerPurgeMetrics } from './db/purge-metrics.ts'
import { upstreamMetrics } from './upstream/metrics.ts'
import type { Role } from './roles.ts'

/**
 * Starts each feature's background work for a role; returns a function that stops it all. `all` here is
 * inline (one event loop: tests, embedders); the CLI's `serve` moves the worker role to a thread.
 */
export async function startBackground(rt: Runtime, options: { role?: Role } = {}): Promise<() => Promise<void>> {
  const role = options.role ?? 'all'
  const stops: Array<() => Promise<void> | void> = []
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop()
  }
  try {
    // Registered first, and a first look for killed instances on this machine: their claims are claimable again
    // before this one's workers start (src/instances.ts).
    stops.push(await startInstanceRegistry(rt))
    // ── feature background work ───────────────────────────────────────────────────────────────
    if (role !== 'worker') stops.push(startProxyMaintenance(rt))
    if (role === 'receiver') {
      setProcessedElsewhere(rt, true)
      stops.push(() => setProcessedElsewhere(rt, false))
    }
    if (role !== 'receiver') {
      // The retention purges run in the workers started here, and the call queue's and recipes' requests to the provider
      // are sent from here: their metrics are listed (the purges' at 0) from now on, not from the first purge or request.
      registerPurgeMetrics(rt.metrics)
      upstreamMetrics(rt.metrics)
      registerConsumers(rt, { recipes: recipeEngineFor(rt) })
      stops.push(startWebhookWorkers(rt))
      const calls = startCallQueue(rt)
      stops.push(() => calls.stop())
      stops.push(await startRecipes(rt))
      stops.push(startMailOutbox(rt))
      stops.push(startDestinations(rt))
      stops.push(startContactKeyFill(rt))
    }
  } catch (error) {
    // Half started is not started: stop what is running so a retry starts clean.
    await stopAll()
    throw error
  }
  return stopAll
}

/**
 * A receiver's task thread (`serve --role receiver`: src/processing-thread.ts): it processes nothing, and runs the heavy
 * work requests hand it. Registered as an instance of its own (a "Run now" it runs is attributed to it, and closed if
 * it is killed), and marked as one whose events others process, as its receiver is: a replay is handed to the workers.
 */
export async function startTaskHost(rt: Runtime): Promise<() => Promise<void>> {
  const stopRegistry = await startInstanceRegistry(rt)
  setProcessedElsewhere(rt, true)
  return async () => {
    setProcessedElsewhere(rt, false)
    await stopRegistry()
  }
}
