import { HTTPError } from 'h3'
import { defineProcessingTask, runProcessingTask } from '../coordination/processing-task.ts'
import type { Runtime } from '../runtime.ts'
import { BrokenRecipeError, recipeEngineFor, RecipeRunningError, RetryRunsAloneError, UnknownRecipeError } from './engine.ts'
import type { RecipeRun } from './runner.ts'
import { keptPlan } from './kept-plan.ts'

/** A recipe run asked for by a request: the run as recorded, or why it could not start. */
export type ManualRunOutcome =
  | { ok: true; run: Omit<RecipeRun, 'result'> }
  | { ok: false; problem: 'unknown' | 'broken' | 'running'; message: string }

/** "Run now" in the processing thread: a nightly batch or a sweep is seconds of work. */
export const recipeRunTask = defineProcessingTask('recipeRun', async (rt, args: { name: string; dryRun: boolean }): Promise<ManualRunOutcome> => {
  try {
    // `result` is what `run` returned, unserialized: it may not cross a thread, and the recorded `summary` says it.
    const { result: _result, ...run } = await recipeEngineFor(rt).run(args.name, { dryRun: args.dryRun })
    // The plan as the run's record keeps it: a dry run of a batch over 100,000 contacts handed 11 MB across to the
    // receiver's thread, which decoded it and, for the admin API, wrote it out again — webhooks waiting meanwhile.
    const kept = keptPlan(run.plan, run.planOmitted)
    return { ok: true, run: { ...run, plan: kept.effects, planOmitted: kept.omitted } }
  } catch (error) {
    if (error instanceof UnknownRecipeError) return { ok: false, problem: 'unknown', message: error.message }
    if (error instanceof BrokenRecipeError) return { ok: false, problem: 'broken', message: error.message }
    if (error instanceof RecipeRunningError || error instanceof RetryRunsAloneError) return { ok: false, problem: 'running', message: error.message }
    throw error
  }
}, { recipeCode: true })

/**
 * A run asked for over HTTP ("Run now" on the dashboard, `POST /admin/recipes/:name/run`), its plan as its record
 * keeps it (src/recipes/kept-plan.ts; `recipes run --json` prints a plan whole, in its own process). Under `serve` it
 * runs in the processing thread, where the recipes' scheduled and event runs happen: a nightly batch or a
 * follow-up sweep is seconds of work that the receiver's event loop must not carry. An unknown recipe is a
 * 404; one that does not load, that another process is running (a real run only), or that waited in vain for an
 * interrupted event's retry running alone (engine.ts → MANUAL_RETRY_WAIT_MS), a 409.
 */
export async function runRecipeNow(rt: Runtime, name: string, dryRun: boolean): Promise<Omit<RecipeRun, 'result'>> {
  const outcome = await runProcessingTask(rt, recipeRunTask, { name, dryRun })
  if (outcome.ok) return outcome.run
  throw new HTTPError({ status: outcome.problem === 'unknown' ? 404 : 409, message: outcome.message })
}
