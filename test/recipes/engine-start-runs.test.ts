import { afterEach, expect, it } from 'vitest'
import { createRecipeEngine, type RecipeEngine } from '../../src/recipes/engine.ts'
import { RUN_STALE_MS } from '../../src/recipes/overlap.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { capturePrepared, queryPlan } from '../helpers/query-plans.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { tempRecipesDir } from './helpers.ts'

let rt: TestRuntime | undefined
let engine: RecipeEngine | undefined
let folder: ReturnType<typeof tempRecipesDir> | undefined
afterEach(async () => {
  await engine?.stop()
  await rt?.close()
  folder?.cleanup()
  rt = engine = folder = undefined
})

// A start of the recipe engine (the service's, its processing thread's after a restart) closes the runs a crashed
// process left marked running. Without an index that read every run kept — 0.4–0.5 s at 200,000 runs — at each start.
it('a start closes the runs a crashed process left running, found by index however many runs are kept', async () => {
  folder = tempRecipesDir()
  folder.write('noop', `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'nothing', run: async () => 'ok' })\n`)
  const clock = createManualClock('2026-01-01T07:00:00Z')
  rt = await createTestRuntime({ clock, env: { RECIPES_DIR: folder.dir, RECIPES_TYPECHECK: 'false' } })
  const now = clock.now()
  // One real run of a recipe can be marked running at a time (migration 0018): the recent one is another recipe's.
  const run = (id: string, status: string, startedAt: number, dryRun = 0, recipe = 'noop') =>
    rt!.store.db.insertInto('recipe_runs').values({
      id, recipe, trigger: 'manual', event_id: null, dry_run: dryRun, status, started_at: startedAt, ended_at: status === 'running' ? null : startedAt + 1,
      summary: null, plan: null, error: null, process: null,
    }).execute()
  await run('run_crashed', 'running', now - RUN_STALE_MS - 1)
  await run('run_crashed_dry', 'running', now - RUN_STALE_MS - 5, 1)
  await run('run_recent', 'running', now - 60_000, 0, 'other')
  await run('run_done', 'succeeded', now - RUN_STALE_MS - 10)

  const prepared = capturePrepared(rt.store.sqlite!)
  try {
    engine = createRecipeEngine(rt)
    await engine.start()
  } finally {
    prepared.stop()
  }
  const rows = await rt.store.db.selectFrom('recipe_runs').select(['id', 'status', 'error']).orderBy('id').execute()
  expect(rows).toEqual([
    { id: 'run_crashed', status: 'failed', error: 'interrupted: the process stopped during the run' },
    { id: 'run_crashed_dry', status: 'failed', error: 'interrupted: the process stopped during the run' },
    { id: 'run_done', status: 'succeeded', error: null },
    { id: 'run_recent', status: 'running', error: null },
  ])
  const close = prepared.texts.filter((t) => /^update "recipe_runs" set .* where "status" = \? and "started_at" <= \?$/.test(t))
  expect(close).toHaveLength(1)
  expect(queryPlan(rt.store.sqlite!, close[0]!, 'running').join(' ')).toMatch(/USING INDEX recipe_runs_running\b/)
})
