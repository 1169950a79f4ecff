import { rmSync } from 'node:fs'
import { afterAll, afterEach, expect, it } from 'vitest'
import { createRecipeEngine, type RecipeEngine } from '../../src/recipes/engine.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { tempRecipesDir } from './helpers.ts'

/**
 * An engine that does not watch its folder — the one `serve`'s receiver answers the dashboard and `/admin/recipes`
 * from, while its processing thread runs the recipes — lists the folder as it is now: an added recipe, a fixed one,
 * an edited schedule, a removed one. It listed them as first loaded until a restart.
 */
let rt: TestRuntime | undefined
let engine: RecipeEngine | undefined
const folder = tempRecipesDir()
afterAll(() => folder.cleanup())
afterEach(async () => {
  await engine?.stop()
  await rt?.close()
  engine = rt = undefined
})

const recipe = (description: string, schedule: string) => `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: ${JSON.stringify(description)}, schedule: ${JSON.stringify(schedule)}, run: () => 'ok' })
`

it('lists the folder as it is now, without watching it', async () => {
  folder.write('fixme', `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'half written', run: () => {\n`)
  folder.write('daily', recipe('daily', '0 8 * * *'))
  rt = await createTestRuntime({ env: { RECIPES_DIR: folder.dir } })
  engine = createRecipeEngine(rt)
  const first = await engine.list()
  expect(first.map((r) => [r.name, r.broken === null, r.schedule])).toEqual([['daily', true, '0 8 * * *'], ['fixme', false, null]])

  folder.write('fixme', recipe('fixed now', '30 9 * * *'))
  folder.write('added', recipe('added later', '0 12 * * *'))
  folder.write('daily', recipe('daily, later', '0 18 * * *'))
  const second = await engine.list()
  expect(second.map((r) => [r.name, r.broken, r.schedule])).toEqual([['added', null, '0 12 * * *'], ['daily', null, '0 18 * * *'], ['fixme', null, '30 9 * * *']])

  rmSync(`${folder.dir}/added.ts`)
  expect((await engine.list()).map((r) => r.name)).toEqual(['daily', 'fixme'])
})
