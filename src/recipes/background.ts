import type { Runtime } from '../runtime.ts'
import { every } from '../utils/every.ts'
import { recipeEngineFor } from './engine.ts'
import { purgeRecipeHistory } from './retention.ts'
import { PURGE_EVERY_MS } from '../db/delete-in-chunks.ts'

/**
 * Serving: load RECIPES_DIR, start schedules (with the missed-tick catch-up), watch the folder for edits,
 * and run event-triggered recipes from their queues (filled by the pipeline's `recipes` consumer, see
 * src/pipeline.ts), and purge their queues' rows, runs and ticks past the retention window (every 10 minutes). Returns the stop function.
 */
export async function startRecipes(rt: Runtime, options: { watch?: boolean } = {}): Promise<() => Promise<void>> {
  const engine = recipeEngineFor(rt)
  await engine.start({ watch: options.watch ?? true })
  const stopPurge = every(rt.clock, rt.log, 'recipe history purge', 90_000, PURGE_EVERY_MS, (signal) => purgeRecipeHistory(rt, { signal }))
  return async () => {
    await stopPurge()
    await engine.stop()
  }
}
