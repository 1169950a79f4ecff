import type { H3 } from 'h3'
import type { Runtime } from '../runtime.ts'
import { registerDestinationAdminRoutes } from './admin.ts'
import { destinationMetrics } from './metrics.ts'
import { startDeliveryWorker } from './worker.ts'

/**
 * Forwarding verified events to the team's own systems: config (`DESTINATIONS`), the durable outbox,
 * the delivery worker, signing, dead letters and replay, metrics, CLI and admin routes.
 */
export function registerDestinationRoutes(app: H3, rt: Runtime): void {
  // Registered up front so /metrics lists the series before the first delivery.
  destinationMetrics(rt)
  registerDestinationAdminRoutes(app, rt)
}

/** Starts the delivery worker (nothing when no destination is configured); returns its stop function. */
export function startDestinations(rt: Runtime): () => Promise<void> {
  if (rt.config.destinations.list.length === 0) return async () => {}
  const worker = startDeliveryWorker(rt)
  return () => worker.stop()
}

export { enqueueDeliveries, type OutboxEvent } from './outbox.ts'
export { startDeliveryWorker, type DeliveryWorker } from './worker.ts'
export { destinationCommands } from './commands.ts'
export { publishEvent, type RecipeDestinations } from './publish.ts'
export { defineDestination, type DestinationConfig, type DestinationInput } from './config.ts'
