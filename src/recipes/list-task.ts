import { defineProcessingTask, runProcessingTask } from '../coordination/processing-task.ts'
import type { Runtime } from '../runtime.ts'
import { recipeEngineFor, type RecipeInfo } from './engine.ts'

/**
 * The recipes as the service runs them, listed where they run: under `serve` in the processing thread, whose engine
 * has them loaded. Listing on the receiver's thread loaded every recipe file there — its top-level code run on the
 * thread that answers webhooks (a `while (true)` stopped the receiver; `Date.now = …` made it refuse every signature).
 */
export const recipeListTask = defineProcessingTask('recipeList', (rt, _args: Record<string, never>): Promise<RecipeInfo[]> => recipeEngineFor(rt).list(), { recipeCode: true })

export function listRecipes(rt: Runtime): Promise<RecipeInfo[]> {
  return runProcessingTask(rt, recipeListTask, {})
}
