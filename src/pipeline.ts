import type { RecipeEngine } from './recipes/engine.ts'
import type { Runtime } from './runtime.ts'
import { optOutConsumer } from './campaigns/opt-out-hook.ts'
import { cacheInvalidationConsumer } from './proxy/invalidate-consumer.ts'

/**
 * The processing pipeline, in order. Processing claims a batch of stored events and hands it to each step:
 *   1. the conversations read model (built into processing: provider events only, named targets' events
 *      pass through untouched);
 *   2. `proxy-cache` — invalidates what the batch touched;
 *   3. `dnc-opt-out` — numbers whose results ask not to be called;
 *   4. `recipes` — queues the batch for each recipe whose `on` subscribes to it (the worker role only).
 * A new consumer (a destination, say) is one file exporting an `EventConsumer`, added here.
 */
export function registerConsumers(rt: Runtime, options: { recipes?: RecipeEngine } = {}): void {
  const add = (name: string, consume: Parameters<Runtime['hooks']['consume']>[1]) => {
    if (!rt.hooks.has(name)) rt.hooks.consume(name, consume)
  }
  add('proxy-cache', cacheInvalidationConsumer(rt))
  add('dnc-opt-out', optOutConsumer(rt))
  const engine = options.recipes
  if (engine) add('recipes', (batch) => engine.enqueueEvents(batch))
}
