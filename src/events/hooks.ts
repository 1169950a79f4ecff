import type { WebhookEvent } from '../upstream/schemas.ts'

/**
 * A provider event after the read model was updated: the stored event, parsed and zod-typed.
 * `source` tells a delivered webhook from one reconciliation synthesized.
 */
export interface ProcessedEvent {
  /** Absent or 'provider' (the discriminant against `TargetEvent`). */
  kind?: 'provider'
  eventId: string
  eventType: string
  target: string
  source: 'webhook' | 'reconcile'
  receivedAt: number
  event: WebhookEvent
}

/**
 * An event received on a named target that is not the provider (`WEBHOOK_TARGETS`, e.g. a CRM sending
 * Standard Webhooks): verified and stored, but its body is whatever that sender sends. The provider's read
 * model ignores it; recipes subscribe to it as `<target>:<event type>`.
 */
export interface TargetEvent {
  kind: 'target'
  eventId: string
  eventType: string
  target: string
  source: 'webhook'
  receivedAt: number
  /** The JSON body as received. */
  body: unknown
  event?: undefined
}

/** What flows through the processing pipeline. */
export type PipelineEvent = ProcessedEvent | TargetEvent

export function isProviderEvent(event: PipelineEvent): event is ProcessedEvent {
  return event.kind !== 'target'
}

/** A reaction to one stored provider event. Must be idempotent: a failed event is processed again from the start. */
export type EventHook = (event: ProcessedEvent) => Promise<void> | void

/**
 * A consumer of the pipeline: receives the events of a claimed batch that no earlier step failed, and
 * returns the ones it failed (by event id); an event that fails in any consumer is retried as a whole, so
 * consumers must be idempotent. Throwing fails the whole batch.
 */
export type EventConsumer = (batch: PipelineEvent[]) => Promise<Map<string, Error> | void> | Map<string, Error> | void

export interface EventHooks {
  /** Registers a per-event hook for provider events; returns an unregister function. */
  on(name: string, hook: EventHook): () => void
  /** Registers a batch consumer (read model extensions, recipe triggers, destinations); returns an unregister function. */
  consume(name: string, consumer: EventConsumer): () => void
  has(name: string): boolean
  /** Consumers in registration order (per-event hooks adapted to batches). */
  list(): Array<{ name: string; consume: EventConsumer }>
}

/** Runs a per-event hook over the provider events of a batch, collecting each event's failure. */
function perEvent(name: string, hook: EventHook): EventConsumer {
  return async (batch) => {
    const failures = new Map<string, Error>()
    for (const e of batch) {
      if (!isProviderEvent(e)) continue
      try {
        await hook(e)
      } catch (error) {
        failures.set(e.eventId, new Error(`hook "${name}" failed: ${(error as Error)?.message ?? String(error)}`, { cause: error }))
      }
    }
    return failures
  }
}

export function createEventHooks(): EventHooks {
  const consumers = new Map<string, EventConsumer>()
  const add = (name: string, consumer: EventConsumer) => {
    if (consumers.has(name)) throw new Error(`an event consumer named "${name}" is already registered`)
    consumers.set(name, consumer)
    return () => {
      if (consumers.get(name) === consumer) consumers.delete(name)
    }
  }
  return {
    on: (name, hook) => add(name, perEvent(name, hook)),
    consume: add,
    has: (name) => consumers.has(name),
    list: () => [...consumers].map(([name, consume]) => ({ name, consume })),
  }
}
