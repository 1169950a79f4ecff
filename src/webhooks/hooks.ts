import type { WebhookEvent } from '../upstream/schemas.ts'

/**
 * What processing hands to each hook after the read model is updated: the stored event, parsed.
 * `source` tells a delivered webhook from one reconciliation synthesized.
 */
export interface ProcessedEvent {
  eventId: string
  eventType: string
  target: string
  source: 'webhook' | 'reconcile'
  receivedAt: number
  event: WebhookEvent
}

/** A reaction to a stored event. Must be idempotent: a failed event is processed again from the start. */
export type EventHook = (event: ProcessedEvent) => Promise<void> | void

export interface EventHooks {
  /** Registers a named hook (cache invalidation, recipe triggers, …); returns an unregister function. */
  on(name: string, hook: EventHook): () => void
  /** Hooks in registration order. */
  list(): Array<{ name: string; hook: EventHook }>
}

export function createEventHooks(): EventHooks {
  const hooks = new Map<string, EventHook>()
  return {
    on(name, hook) {
      if (hooks.has(name)) throw new Error(`an event hook named "${name}" is already registered`)
      hooks.set(name, hook)
      return () => {
        hooks.delete(name)
      }
    },
    list: () => [...hooks].map(([name, hook]) => ({ name, hook })),
  }
}
