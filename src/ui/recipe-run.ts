import { fromJson } from '../db/json.ts'
import type { PlannedEffect } from '../effects.ts'
import type { RecipeTriggerType } from '../recipes/define.ts'
import type { RecipeRun, RunStatus } from '../recipes/runner.ts'
import { decodeSummary } from '../recipes/summary.ts'
import type { Runtime } from '../runtime.ts'

/**
 * One recorded run of a recipe, as `listRuns` reads runs (the run page of the dashboard: what "Run now" redirects
 * to), or undefined when that recipe has no run with this id.
 */
export async function findRecipeRun(rt: Runtime, recipe: string, id: string): Promise<Omit<RecipeRun, 'result'> | undefined> {
  const r = await rt.store.db.selectFrom('recipe_runs').selectAll().where('id', '=', id).where('recipe', '=', recipe).executeTakeFirst()
  if (!r) return undefined
  return {
    id: r.id,
    recipe: r.recipe,
    trigger: r.trigger as RecipeTriggerType,
    eventId: r.event_id,
    dryRun: Number(r.dry_run) === 1,
    status: r.status as RunStatus,
    startedAt: Number(r.started_at),
    endedAt: r.ended_at === null ? null : Number(r.ended_at),
    summary: decodeSummary(r.summary),
    plan: fromJson<PlannedEffect[]>(r.plan) ?? [],
    error: r.error,
  }
}
