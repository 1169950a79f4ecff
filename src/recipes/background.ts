import type { Runtime } from '../runtime.ts'
import { recipeEngineFor } from './engine.ts'

/**
 * Serving: load RECIPES_DIR, start schedules (with the missed-tick catch-up), watch the folder for edits,
 * and fire event-triggered recipes from the receiver's processing. Returns the stop function.
 */
export async function startRecipes(rt: Runtime, options: { watch?: boolean } = {}): Promise<() => Promise<void>> {
  const engine = recipeEngineFor(rt)
  const off = rt.hooks.on('recipes', (event) => engine.handleEvent(event))
  await engine.start({ watch: options.watch ?? true })
  return async () => {
    off()
    await engine.stop()
  }
}
