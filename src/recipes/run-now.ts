import { HTTPError } from 'h3'
import { runProcessingTask } from '../processing-host.ts'
import type { Runtime } from '../runtime.ts'
import type { RecipeRun } from './runner.ts'

/**
 * A run asked for over HTTP ("Run now" on the dashboard, `POST /admin/recipes/:name/run`). Under `serve` it
 * runs in the processing thread, where the recipes' scheduled and event runs happen: a nightly batch or a
 * follow-up sweep is seconds of work that the receiver's event loop must not carry. An unknown recipe is a
 * 404, one that does not load a 409.
 */
export async function runRecipeNow(rt: Runtime, name: string, dryRun: boolean): Promise<Omit<RecipeRun, 'result'>> {
  const outcome = await runProcessingTask(rt, 'recipeRun', { name, dryRun })
  if (outcome.ok) return outcome.run
  throw new HTTPError({ status: outcome.problem === 'unknown' ? 404 : 409, message: outcome.message })
}
