import { afterEach, beforeEach, expect, it } from 'vitest'
import { createRecipeEngine } from '../../src/recipes/engine.ts'
import type { RecipeRun } from '../../src/recipes/runner.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { tempRecipesDir } from './helpers.ts'

/** ctx.destinations.publish checks its arguments as every recipe function does: a typo is refused, not dropped. */
let rt: TestRuntime
let folder: ReturnType<typeof tempRecipesDir>
beforeEach(async () => {
  folder = tempRecipesDir()
  rt = await createTestRuntime({ env: { RECIPES_DIR: folder.dir } })
})
afterEach(async () => {
  await rt.close()
  folder.cleanup()
})

async function run(body: string, dryRun: boolean): Promise<RecipeRun> {
  folder.write('r', `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'x', async run(ctx) { ${body} } })\n`)
  return createRecipeEngine(rt).run('r', { dryRun })
}
const errorOf = async (body: string, dryRun = true) => (await run(body, dryRun)).error?.replace(/ \(at [^()]*\)$/, '') ?? null

it('refuses an unknown option naming it (a misspelt idempotencyKey lost the de-duplication)', async () => {
  for (const dryRun of [true, false]) {
    expect(await errorOf(`await ctx.destinations.publish('x.y', {}, { idempotency_key: 'same' } as never)`, dryRun)).toMatch(
      /^ctx\.destinations\.publish\(options\): .*idempotency_key.*idempotency_key: did you mean idempotencyKey\?$/,
    )
  }
  expect(await errorOf(`await ctx.destinations.publish('x.y', {}, { idempotencyKey: 'same', agentId: 101 })`)).toBeNull()
})

it('refuses a missing data object and says a too-long type is too long', async () => {
  expect(await errorOf(`await ctx.destinations.publish('x.y' as never, undefined as never)`)).toMatch(/^ctx\.destinations\.publish\(data\): data: must be an object/)
  expect(await errorOf(`await ctx.destinations.publish('x.y', [1] as never)`)).toMatch(/^ctx\.destinations\.publish\(data\): data: must be an object/)
  const long = await errorOf(`await ctx.destinations.publish('a'.repeat(101), {})`)
  expect(long).toMatch(/^ctx\.destinations\.publish\(type\): type: must be at most 100 characters/)
  expect(long).not.toMatch(/type: must be letters/)
  expect(await errorOf(`await ctx.destinations.publish('a b', {})`)).toMatch(/^ctx\.destinations\.publish\(type\): type: must be letters, digits/)
})
