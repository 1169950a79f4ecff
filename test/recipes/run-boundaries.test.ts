import { afterEach, beforeEach, expect, it } from 'vitest'
import { createRecipeEngine } from '../../src/recipes/engine.ts'
import { listCalls } from '../../src/calls/list-calls.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { tempRecipesDir } from './helpers.ts'

/** What a recipe can reach beyond its own run: the service's shared defaults, and its ctx after the run ended. */
let rt: TestRuntime
let folder: ReturnType<typeof tempRecipesDir>
beforeEach(async () => {
  folder = tempRecipesDir()
  rt = await createTestRuntime({ env: { RECIPES_DIR: folder.dir, RECIPES_TYPECHECK: 'false' } })
})
afterEach(async () => {
  await rt.close()
  folder.cleanup()
})

// One recipe set `ctx.campaigns.DEFAULT_WINDOW.end = '23:59'` in a dry run, and every recipe's next real call went out
// at 21:30 local time.
it('the calling window and follow-up defaults cannot be changed by a recipe, dry run or not', async () => {
  folder.write('widens', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'widens the window for everyone', async run(ctx) {
  const w = ctx.campaigns.DEFAULT_WINDOW as { end: string }
  const f = ctx.campaigns.DEFAULT_FOLLOW_UP as { maxAttempts: number; minGapMs: { busy: number } }
  const tried: string[] = []
  for (const change of [() => { w.end = '23:59' }, () => { f.maxAttempts = 99 }, () => { f.minGapMs.busy = 0 }]) {
    try { change() } catch (error) { tried.push((error as Error).name) }
  }
  return { tried, window: ctx.campaigns.DEFAULT_WINDOW, cap: ctx.campaigns.DEFAULT_FOLLOW_UP.maxAttempts }
} })
`)
  const engine = createRecipeEngine(rt)
  try {
    for (const dryRun of [true, false]) {
      const run = await engine.run('widens', { dryRun })
      expect(run.summary).toEqual({ tried: ['TypeError', 'TypeError', 'TypeError'], window: { start: '09:00', end: '21:00' }, cap: 3 })
    }
  } finally {
    await engine.stop()
  }
})

// A timer the recipe left running placed a call and wrote state after the run was recorded with an empty plan.
it('ctx refuses effects once its run has ended, and says so', async () => {
  folder.write('lingers', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'acts after it returns', async run(ctx) {
  const g = globalThis as { lateOutcomes?: Promise<string[]> }
  g.lateOutcomes = new Promise((resolve) => setImmediate(() => resolve(Promise.all([
    ctx.state.set('late', 'x').then(() => 'done', (e: Error) => e.name),
    ctx.campaigns.scheduleCall({ agentId: 101, phone: '+919876543210' }).then(() => 'done', (e: Error) => e.name),
    ctx.mail.send({ to: 'ops@example.com', subject: 'late', text: 'late' }).then(() => 'done', (e: Error) => e.name),
  ]))))
  await ctx.state.set('inside', 'y')
  return 'returned'
} })
`)
  const logs = captureLogs('warn')
  rt.log = logs.log
  const engine = createRecipeEngine(rt)
  try {
    const run = await engine.run('lingers')
    expect(run.status).toBe('succeeded')
    expect(await (globalThis as { lateOutcomes?: Promise<string[]> }).lateOutcomes).toEqual(['RunEndedError', 'RunEndedError', 'RunEndedError'])
    expect(logs.find(/after its run ended; refused/).map((l) => l.call)).toEqual(['ctx.state.set()', 'ctx.campaigns.scheduleCall()', 'ctx.mail.send()'])
    expect(await listCalls(rt, {})).toEqual([])
    const rows = await rt.store.db.selectFrom('kv_state').select('key').where('namespace', 'like', '%lingers%').execute()
    expect(rows.map((r) => r.key)).toEqual(['inside'])
  } finally {
    delete (globalThis as { lateOutcomes?: unknown }).lateOutcomes
    await engine.stop()
  }
})
