import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

/** The default RECIPES_DIR of tests: no recipes at all (see test/fixtures/recipes/README.md). */
export const FIXTURE_RECIPES_DIR = resolve(import.meta.dirname, '../fixtures/recipes')

/** The shipped recipes folder: read single files from it by name, never list it. */
export const SHIPPED_RECIPES_DIR = resolve(import.meta.dirname, '../../recipes')

/**
 * A temp recipes folder holding copies of the named shipped recipes, so a recipe a user adds under
 * `recipes/` (broken or not) never shows up in a test.
 */
export function shippedRecipesDir(...names: string[]): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'sb-shipped-'))
  for (const name of names) copyFileSync(join(SHIPPED_RECIPES_DIR, `${name}.ts`), join(dir, `${name}.ts`))
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) }
}

/** The recipes this project ships, by name. */
export const SHIPPED_RECIPE_NAMES = ['daily-report', 'nightly-batch', 'no-answer-followup'] as const

let allShipped: string | undefined

/**
 * A folder holding copies of every shipped recipe (SHIPPED_RECIPE_NAMES), for tests of "the service as shipped": the
 * checkout's `recipes/` folder itself is the team's, and a recipe a user adds there (the README's first step is
 * `recipes new`) joined every such test — doctor counted four recipes, the crash test's follow-ups doubled. One copy
 * for the whole run, made by the global setup (test/helpers/global-setup.ts) and removed at its end: the recipes'
 * type verdicts are kept by file path, and a copy per test process had each of them type-check the three afresh
 * (seconds of CPU each). Tests only read it. Outside such a run (a script importing this), a copy of its own.
 */
export function shippedRecipesCopy(): string {
  const shared = process.env.SB_SHIPPED_RECIPES
  if (shared) return shared
  if (allShipped) return allShipped
  const { dir, cleanup } = shippedRecipesDir(...SHIPPED_RECIPE_NAMES)
  process.once('exit', cleanup)
  return (allShipped = dir)
}

/** The run's shared copy (see shippedRecipesCopy), at a path named after the run; the global setup's. */
export function makeRunShippedRecipes(run: string): string {
  const dir = join(tmpdir(), `sb-shipped-recipes-${run}`)
  mkdirSync(dir, { recursive: true })
  for (const name of SHIPPED_RECIPE_NAMES) copyFileSync(join(SHIPPED_RECIPES_DIR, `${name}.ts`), join(dir, `${name}.ts`))
  return dir
}
