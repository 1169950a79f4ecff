import { createHash } from 'node:crypto'
import type { Runtime } from '../runtime.ts'
import type { Effects } from '../effects.ts'
import { enqueueDeliveries, planDeliveries, PUBLISHED_PREFIX, type OutboxEvent } from './outbox.ts'
import { z } from 'zod'
import { MAX_CONVERSATION_ID_LENGTH } from '../upstream/id-limits.ts'
import { checkArgument } from '../utils/argument-error.ts'
import { didYouMean } from '../utils/did-you-mean.ts'

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
const MAX_TYPE_LENGTH = 100

const typeSchema = z
  .string({ error: 'must be a string' })
  .min(1, { error: 'must not be empty' })
  .max(MAX_TYPE_LENGTH, { error: `must be at most ${MAX_TYPE_LENGTH} characters` })
  .regex(/^[a-z0-9][a-z0-9_.-]*$/i, { error: 'must be letters, digits, ".", "-" or "_", starting with a letter or digit' })
const dataSchema = z.custom<Record<string, unknown>>((v) => typeof v === 'object' && v !== null && !Array.isArray(v), {
  error: "must be an object: the event's data, e.g. { phone: '+919876543211' }",
})
const OPTION_KEYS = ['conversationId', 'agentId', 'idempotencyKey'] as const
// Strict: a misspelt key (`idempotency_key`) was dropped, and with it the de-duplication the recipe asked for.
const optionsSchema = z.strictObject({
  conversationId: z.string().min(1).max(MAX_CONVERSATION_ID_LENGTH, { error: `must be at most ${MAX_CONVERSATION_ID_LENGTH} characters` }).optional(),
  agentId: z.number().int().optional(),
  idempotencyKey: z.string().min(1, { error: 'must not be empty' }).optional(),
})
const FN = 'ctx.destinations.publish'

/** "did you mean idempotencyKey?" for a key of `options` that is not one. */
function optionsHint(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const hints = Object.keys(value)
    .filter((k) => !(OPTION_KEYS as readonly string[]).includes(k))
    .map((k) => [k, didYouMean(k, OPTION_KEYS)] as const)
    .filter(([, meant]) => meant !== undefined)
    .map(([k, meant]) => `${k}: did you mean ${meant}?`)
  return hints.length > 0 ? hints.join('; ') : undefined
}

/**
 * Queues an event for every destination that wants it, in one transaction. The body has the provider's
 * envelope (`event_id`, `event_type`, `timestamp`, `data`) so a receiving app handles both alike.
 */
export async function publishEvent(rt: Runtime, recipe: string, type: string, payload: Record<string, unknown>, options: PublishOptions = {}, effects?: Effects): Promise<PublishResult> {
  if (type.length > MAX_TYPE_LENGTH) throw new Error(`event type must be at most ${MAX_TYPE_LENGTH} characters (got ${type.length})`)
  if (!TYPE.test(type)) throw new Error(`event type "${type}" must be letters, digits, ".", "-" or "_"`)
  // Deliveries are ordered per conversation through an index; Postgres refuses an entry past ~2,700 bytes.
  if (options.conversationId !== undefined && options.conversationId.length > MAX_CONVERSATION_ID_LENGTH) {
    throw new Error(`ctx.destinations.publish: conversationId must be at most ${MAX_CONVERSATION_ID_LENGTH} characters`)
  }
  const now = rt.clock.now()
  const eventId = options.idempotencyKey
    ? `${PUBLISHED_PREFIX}${createHash('sha256').update(recipe).update('\0').update(options.idempotencyKey).digest('base64url').slice(0, 24)}`
    : `${PUBLISHED_PREFIX}${rt.random.uuid()}`
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
  return {
    // Async, so a refused argument is a rejected promise as every other failure of publish is, not a throw.
    publish: async (type, payload, options) =>
      publishEvent(
        rt,
        recipe,
        checkArgument(typeSchema, type, { fn: FN, arg: 'type', expected: `an event type of up to ${MAX_TYPE_LENGTH} letters, digits, ".", "-" and "_", e.g. "followup.scheduled"` }),
        checkArgument(dataSchema, payload, { fn: FN, arg: 'data', expected: "the event's data as an object" }),
        checkArgument(optionsSchema.optional(), options, { fn: FN, arg: 'options', expected: '{ conversationId?: string, agentId?: number, idempotencyKey?: string }', hint: optionsHint }),
        effects,
      ),
  }
}
