import type { Runtime } from '../runtime.ts'
import type { Effects, PlannedEffect } from '../utils/effects.ts'
import { fromJson, toJson } from '../db/json.ts'
import type { RecipeContext, RecipeDefinition, RecipeTrigger, RecipeTriggerType } from './define.ts'
import { createBindings } from './bindings.ts'
import { createQueries } from './queries.ts'
import { createKvState, recipeStateNamespace } from './state.ts'

export type RunStatus = 'running' | 'succeeded' | 'failed' | 'skipped'

/** One recorded run (a recipe_runs row, JSON parsed), as the CLI and /admin/recipes show it. */
export interface RecipeRun {
  id: string
  recipe: string
  trigger: RecipeTriggerType
  eventId: string | null
  dryRun: boolean
  status: RunStatus
  startedAt: number
  endedAt: number | null
  /** What `run` returned (a string as is, anything else as JSON), or why the run was skipped. */
  summary: string | null
  plan: PlannedEffect[]
  error: string | null
  /** What `run` returned, unserialized (only on the run that just happened). */
  result?: unknown
}

function summarize(value: unknown): string | null {
  if (value === undefined || value === null) return null
  if (typeof value === 'string') return value
  try {
    return JSON.stringify(value)
  } catch {
    return String(value)
  }
}

function errorText(error: unknown): string {
  if (error instanceof Error) return error.message || error.name
  return String(error)
}

/** Records a tick that did not run because the previous run is still going. */
export async function recordSkipped(rt: Runtime, recipe: string, trigger: RecipeTrigger, reason: string): Promise<RecipeRun> {
  const now = rt.clock.now()
  const run: RecipeRun = {
    id: rt.random.uuid(),
    recipe,
    trigger: trigger.type,
    eventId: trigger.event?.eventId ?? null,
    dryRun: false,
    status: 'skipped',
    startedAt: now,
    endedAt: now,
    summary: reason,
    plan: [],
    error: null,
  }
  await rt.store.db
    .insertInto('recipe_runs')
    .values({
      id: run.id, recipe, trigger: run.trigger, event_id: run.eventId, dry_run: 0, status: 'skipped',
      started_at: now, ended_at: now, summary: reason, plan: null, error: null,
    })
    .execute()
  return run
}

/**
 * Runs a recipe once and records it: a `running` row first (so other replicas see it), then the outcome.
 * A throw from the recipe is captured as a failed run; it never escapes.
 */
export async function executeRun(
  rt: Runtime,
  name: string,
  definition: RecipeDefinition,
  options: { trigger: RecipeTrigger; dryRun: boolean; timezone: string },
): Promise<RecipeRun> {
  const { trigger, dryRun, timezone } = options
  const startedAt = rt.clock.now()
  const id = rt.random.uuid()
  const effects: Effects = { dryRun, plan: [] }
  const log = rt.log.child({ recipe: name, run_id: id, trigger: trigger.type, dry_run: dryRun })
  await rt.store.db
    .insertInto('recipe_runs')
    .values({
      id, recipe: name, trigger: trigger.type, event_id: trigger.event?.eventId ?? null, dry_run: dryRun ? 1 : 0,
      status: 'running', started_at: startedAt, ended_at: null, summary: null, plan: null, error: null,
    })
    .execute()
  const bindings = createBindings(rt, effects, name)
  const ctx: RecipeContext = {
    name,
    trigger,
    dryRun,
    now: new Date(startedAt),
    timezone,
    log,
    client: rt.workspaceClient(),
    data: createQueries(rt),
    campaigns: bindings.campaigns,
    reports: bindings.reports,
    mail: bindings.mail,
    state: createKvState(rt, recipeStateNamespace(name)),
    plan: effects.plan,
    config: rt.config,
  }
  let status: RunStatus = 'succeeded'
  let result: unknown
  let error: string | null = null
  try {
    result = await definition.run(ctx)
  } catch (thrown) {
    status = 'failed'
    error = errorText(thrown)
    log.error({ err: thrown }, 'recipe run failed')
  }
  const endedAt = rt.clock.now()
  const summary = summarize(result)
  await rt.store.db
    .updateTable('recipe_runs')
    .set({ status, ended_at: endedAt, summary, plan: effects.plan.length ? toJson(effects.plan) : null, error })
    .where('id', '=', id)
    .execute()
  if (status === 'succeeded') log.info({ summary }, 'recipe run succeeded')
  return {
    id, recipe: name, trigger: trigger.type, eventId: trigger.event?.eventId ?? null, dryRun, status,
    startedAt, endedAt, summary, plan: effects.plan, error, result,
  }
}

/** Recorded runs, newest first. */
export async function listRuns(rt: Runtime, query: { recipe?: string; limit?: number } = {}): Promise<RecipeRun[]> {
  let q = rt.store.db.selectFrom('recipe_runs').selectAll()
  if (query.recipe !== undefined) q = q.where('recipe', '=', query.recipe)
  const rows = await q.orderBy('started_at', 'desc').orderBy('id', 'desc').limit(query.limit ?? 50).execute()
  return rows.map((r) => ({
    id: r.id,
    recipe: r.recipe,
    trigger: r.trigger as RecipeTriggerType,
    eventId: r.event_id,
    dryRun: Number(r.dry_run) === 1,
    status: r.status as RunStatus,
    startedAt: Number(r.started_at),
    endedAt: r.ended_at === null ? null : Number(r.ended_at),
    summary: r.summary,
    plan: fromJson<PlannedEffect[]>(r.plan) ?? [],
    error: r.error,
  }))
}
