import type { Runtime } from '../runtime.ts'
import { recipeEngineFor } from './engine.ts'

/**
 * Serving: load RECIPES_DIR, start schedules (with the missed-tick catch-up), watch the folder for edits,
 * and run event-triggered recipes from their queues (filled by the pipeline's `recipes` consumer, see
 * src/pipeline.ts). Returns the stop function.
 */
export async function startRecipes(rt: Runtime, options: { watch?: boolean } = {}): Promise<() => Promise<void>> {
  const engine = recipeEngineFor(rt)
  await engine.start({ watch: options.watch ?? true })
  return async () => {
    await engine.stop()
  }
}
