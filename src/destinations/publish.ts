import { createHash } from 'node:crypto'
import type { Runtime } from '../runtime.ts'
import type { Effects } from '../effects.ts'
import { enqueueDeliveries, planDeliveries, type OutboxEvent } from './outbox.ts'
import { MAX_CONVERSATION_ID_LENGTH } from '../upstream/id-limits.ts'

export interface PublishOptions {
  conversationId?: string
  agentId?: number
  /** Same key, same event id: a re-run of the recipe publishes nothing twice. */
  idempotencyKey?: string
}

export interface PublishResult {
  eventId: string
  /** Destinations the event was queued for (or would be, in a dry run). */
  destinations: string[]
}

/** `ctx.destinations`: a recipe's own events, forwarded like the provider's (signed, retried, replayable). */
export interface RecipeDestinations {
  /** Queues `type` with `payload` as `data` for every destination whose `events` match; planned only in a dry run. */
  publish(type: string, payload: Record<string, unknown>, options?: PublishOptions): Promise<PublishResult>
}

const TYPE = /^[a-z0-9][a-z0-9_.-]{0,99}$/i

/**
 * Queues an event for every destination that wants it, in one transaction. The body has the provider's
 * envelope (`event_id`, `event_type`, `timestamp`, `data`) so a receiving app handles both alike.
 */
export async function publishEvent(rt: Runtime, recipe: string, type: string, payload: Record<string, unknown>, options: PublishOptions = {}, effects?: Effects): Promise<PublishResult> {
  if (!TYPE.test(type)) throw new Error(`event type "${type}" must be letters, digits, ".", "-" or "_"`)
  // Deliveries are ordered per conversation through an index; Postgres refuses an entry past ~2,700 bytes.
  if (options.conversationId !== undefined && options.conversationId.length > MAX_CONVERSATION_ID_LENGTH) {
    throw new Error(`ctx.destinations.publish: conversationId must be at most ${MAX_CONVERSATION_ID_LENGTH} characters`)
  }
  const now = rt.clock.now()
  const eventId = options.idempotencyKey
    ? `pub_${createHash('sha256').update(recipe).update('\0').update(options.idempotencyKey).digest('base64url').slice(0, 24)}`
    : `pub_${rt.random.uuid()}`
  const event: OutboxEvent = {
    event_id: eventId,
    event_type: type,
    agent_id: options.agentId ?? null,
    conversation_id: options.conversationId ?? null,
    received_at: now,
    body: JSON.stringify({ event_id: eventId, event_type: type, timestamp: new Date(now).toISOString(), data: payload }),
    origin: 'recipe',
  }
  const planned = planDeliveries(rt, [event])
  const destinations = planned.map((r) => r.destination)
  if (effects?.dryRun) {
    effects.plan.push({ kind: 'publish', event_type: type, event_id: eventId, destinations })
    return { eventId, destinations }
  }
  if (destinations.length > 0) await rt.store.db.transaction().execute((trx) => enqueueDeliveries(trx, rt, [event], planned))
  effects?.plan.push({ kind: 'publish', event_type: type, event_id: eventId, destinations })
  return { eventId, destinations }
}

export function recipeDestinations(rt: Runtime, effects: Effects, recipe: string): RecipeDestinations {
  return { publish: (type, payload, options) => publishEvent(rt, recipe, type, payload, options, effects) }
}
