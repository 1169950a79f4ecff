import type { H3 } from 'h3'
import type { Runtime } from '../runtime.ts'
import { registerEventAdminRoutes } from './admin.ts'
import { webhookMetrics } from './metrics.ts'
import { registerReceiverRoutes } from './receiver.ts'

/**
 * The webhook receiver's public surface: routes, background work, processing/replay, reconciliation,
 * read-model helpers and webhook health for other features (recipes, reports).
 */
export function registerWebhookRoutes(app: H3, rt: Runtime): void {
  // Registered up front so /metrics lists the series (at zero) before the first delivery.
  webhookMetrics(rt.metrics)
  registerReceiverRoutes(app, rt)
  registerEventAdminRoutes(app, rt)
}

export { startWebhookWorkers } from './background.ts'
export { replayEvent, requeueEvent, drainDue, type ProcessOutcome, EventNotFoundError, EventBusyError } from './processing.ts'
export { reconcile, synthesizeEvent, type ReconcileOptions, type ReconcileResult } from './reconcile.ts'
export { purgeOldEvents, type PurgeResult } from './retention.ts'
export { getConversation, listConversations, type StoredConversation, type ConversationFilter } from './read-model.ts'
export { listEvents, getEvent, EVENT_STATUSES, type StoredEvent, type StoredEventDetail, type EventFilter, type EventStatus } from './events.ts'
export { webhookHealth, type WebhookHealth } from './health.ts'
export { signFormant, signStandard } from './verify.ts'
export { acquireLease, releaseLease } from '../coordination/lease.ts'
export { webhookCommands } from './commands.ts'
