/**
 * A recipe whose type error the type-check thread finds is taken off the schedule and disarmed, as a recipe that fails
 * to load is: a tick it missed while broken is not run as a catch-up once it is fixed (README → Recipes: "fixed …
 * start its schedule afresh").
 */
import { afterEach, beforeEach, expect, it } from 'vitest'
import { createRecipeEngine, type RecipeEngine } from '../../src/recipes/engine.ts'
import { listRuns } from '../../src/recipes/runner.ts'
import { createManualClock, type ManualClock } from '../../src/utils/clock.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { tempRecipesDir } from './helpers.ts'
import { captureLogs } from '../helpers/log-capture.ts'

let folder: ReturnType<typeof tempRecipesDir>
let clock: ManualClock
let rt: TestRuntime
const cleanups: Array<() => Promise<void> | void> = []
beforeEach(async () => {
  folder = tempRecipesDir()
  clock = createManualClock('2026-01-01T07:00:00Z')
  rt = await createTestRuntime({ dialect: 'sqlite', clock, env: { RECIPES_DIR: folder.dir, RECIPES_TIMEZONE: 'UTC' } })
})
afterEach(async () => {
  for (const fn of cleanups.reverse()) await fn()
  cleanups.length = 0
  await rt.close()
  folder.cleanup()
})

const recipe = (value: string) => `import { defineRecipe } from 'switchboard'
const n: number = ${value}
export default defineRecipe({ description: 'daily', schedule: '0 8 * * *', timezone: 'UTC', run: (ctx) => ({ n, trigger: ctx.trigger.type }) })
`
const start = async (): Promise<RecipeEngine> => {
  const engine = createRecipeEngine(rt, { typeCheck: true })
  cleanups.push(() => engine.stop())
  await engine.start()
  await engine.list() // waits for the type verdicts
  return engine
}

it('a tick missed while the recipe had a type error is not run as a catch-up after the fix and a restart', { timeout: 60_000 }, async () => {
  folder.write('daily', recipe('1'))
  const engine = await start()
  expect(engine.recipes()[0]!.error).toBeUndefined()

  await clock.advanceTo(Date.parse('2026-01-01T07:55:00Z'))
  folder.write('daily', recipe(`'one'`))          // a type error, found by the type-check thread (not cached yet)
  await engine.reload()
  await engine.list()
  expect(engine.recipes()[0]!.error).toMatch(/type error/)

  await clock.advanceTo(Date.parse('2026-01-01T08:05:00Z'))   // its 08:00 tick passes while it is broken: no run
  await engine.idle()
  expect(await listRuns(rt, { recipe: 'daily' })).toEqual([])

  folder.write('daily', recipe('2'))             // fixed; the service is restarted (or only now notices the file)
  await engine.stop()
  await clock.advanceTo(Date.parse('2026-01-01T08:10:00Z'))
  const restarted = await start()
  await restarted.idle()
  const runs = await listRuns(rt, { recipe: 'daily' })
  expect(runs.map((r) => [r.trigger, r.status])).toEqual([])
})

it('a recipe with a type error is logged broken once, not again each time another file of the folder changes', async () => {
  const logs = captureLogs('warn')
  await rt.close()
  rt = await createTestRuntime({ dialect: 'sqlite', clock, env: { RECIPES_DIR: folder.dir, RECIPES_TIMEZONE: 'UTC' }, log: logs.log })
  folder.write('daily', recipe('"not a number"'))
  folder.write('other', recipe('1'))
  const engine = await start()
  expect(logs.find(/^recipe daily is broken/)).toHaveLength(1)
  // Edits elsewhere in the folder: every recipe's verdict is asked again, and comes back the same for this one.
  for (const value of ['2', '3']) {
    folder.write('other', recipe(value))
    await engine.reload()
    await engine.list()
  }
  expect(logs.find(/^recipe daily is broken/)).toHaveLength(1)
  // Its own reason changing is logged.
  folder.write('daily', recipe('true'))
  await engine.reload()
  await engine.list()
  expect(logs.find(/^recipe daily is broken/)).toHaveLength(2)
})
