import { afterEach, beforeEach } from 'vitest'
import { createRecipeEngine } from '../../src/recipes/engine.ts'
import type { RecipeRun } from '../../src/recipes/runner.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { tempRecipesDir } from './helpers.ts'

export interface OneBodyRecipe {
  /** The test's runtime (a fresh one for each test). */
  readonly rt: TestRuntime
  /** The recipes folder of the test, to write other files into. */
  readonly folder: ReturnType<typeof tempRecipesDir>
  /** Writes recipe `r` whose `run(ctx)` is `body`, and runs it once. */
  run(body: string, dryRun: boolean): Promise<RecipeRun>
  /** The error a dry run of `body` ends with, or null. */
  errorOf(body: string): Promise<string | null>
}

/**
 * A fresh runtime and recipes folder for each test of the file, and a recipe written from the body of its `run`: for
 * tests of what one `ctx` member does with its arguments, dry and real.
 */
export function oneBodyRecipe(): OneBodyRecipe {
  let rt: TestRuntime | undefined
  let folder: ReturnType<typeof tempRecipesDir> | undefined
  beforeEach(async () => {
    folder = tempRecipesDir()
    rt = await createTestRuntime({ env: { RECIPES_DIR: folder.dir } })
  })
  afterEach(async () => {
    await rt?.close()
    folder?.cleanup()
    rt = folder = undefined
  })
  const harness: OneBodyRecipe = {
    get rt() {
      if (!rt) throw new Error('oneBodyRecipe: used outside a test')
      return rt
    },
    get folder() {
      if (!folder) throw new Error('oneBodyRecipe: used outside a test')
      return folder
    },
    run(body, dryRun) {
      harness.folder.write('r', `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'x', async run(ctx) { ${body} } })\n`)
      return createRecipeEngine(harness.rt).run('r', { dryRun })
    },
    async errorOf(body) {
      return (await harness.run(body, true)).error
    },
  }
  return harness
}
