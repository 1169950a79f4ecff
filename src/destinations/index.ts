import type { H3 } from 'h3'
import type { Runtime } from '../runtime.ts'
import { registerDestinationAdminRoutes } from './admin.ts'
import { destinationMetrics } from './metrics.ts'
import { purgeOldDeliveries } from './retention.ts'
import { startDeliveryWorker } from './worker.ts'
import { every } from '../utils/every.ts'
import { PURGE_EVERY_MS } from '../db/delete-in-chunks.ts'
import { foldTallies, keepsTallies, TALLY_FOLD_EVERY_MS } from './tallies.ts'

/**
 * Forwarding verified events to the team's own systems: config (`DESTINATIONS`), the durable outbox,
 * the delivery worker, signing, dead letters and replay, metrics, CLI and admin routes.
 */
export function registerDestinationRoutes(app: H3, rt: Runtime): void {
  // Registered up front so /metrics lists the series before the first delivery.
  destinationMetrics(rt)
  registerDestinationAdminRoutes(app, rt)
}

/**
 * Starts the delivery worker (when a destination is configured), the retention purge (every 10 minutes) of finished
 * deliveries (always: rows outlive a destination removed from the config) and, on Postgres, the fold of the outbox's
 * counts (every minute, src/destinations/tallies.ts); returns their stop function.
 */
export function startDestinations(rt: Runtime): () => Promise<void> {
  const stopPurge = every(rt.clock, rt.log, 'delivery purge', 90_000, PURGE_EVERY_MS, (signal) => purgeOldDeliveries(rt, { signal }))
  const stopFold = keepsTallies(rt) ? every(rt.clock, rt.log, 'folding delivery counts', TALLY_FOLD_EVERY_MS, TALLY_FOLD_EVERY_MS, (signal) => foldTallies(rt, { signal })) : undefined
  const worker = rt.config.destinations.list.length > 0 ? startDeliveryWorker(rt) : undefined
  return async () => {
    await stopPurge()
    await stopFold?.()
    await worker?.stop()
  }
}

export { enqueueDeliveries, type OutboxEvent } from './outbox.ts'
export { startDeliveryWorker, type DeliveryWorker } from './worker.ts'
export { purgeOldDeliveries, type DeliveryPurgeResult } from './retention.ts'
export { destinationCommands } from './commands.ts'
export { publishEvent, type RecipeDestinations } from './publish.ts'
export { defineDestination, type DestinationConfig, type DestinationInput } from '../config/destinations.ts'
