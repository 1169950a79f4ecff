import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
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
