import { readdirSync, readFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { expect, it } from 'vitest'

const TEST_DIR = resolve(import.meta.dirname, '..')

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return entry.name === 'bench' || entry.name === 'fixtures' ? [] : testFiles(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

/**
 * The checkout's `recipes/` folder is the team's: the README's first step adds a recipe to it (`recipes new`), and its
 * promise is that their recipes never affect `npm test`. Tests that named the folder itself — as RECIPES_DIR, or as the
 * folder a test helper ran from — counted the team's recipe with the shipped ones (doctor's "3 load" read 4, the crash
 * test's follow-ups doubled, a broken one failed them all). They use copies of the shipped recipes instead
 * (test/helpers/recipes.ts); only that helper names the folder, to copy single files by name. The benchmarks measure
 * the service as the team runs it, their recipes included.
 */
it("no test names the checkout's recipes folder but the helper that copies the shipped recipes from it", () => {
  const naming = /['"`](?:\.\.\/)+recipes['"`]|join\(\s*ROOT\s*,\s*['"`]recipes['"`]\s*\)/
  const offenders = testFiles(TEST_DIR)
    .filter((file) => !file.endsWith(join('helpers', 'recipes.ts')) && file !== import.meta.filename)
    .filter((file) => naming.test(readFileSync(file, 'utf8')))
    .map((file) => relative(TEST_DIR, file))
  expect(offenders).toEqual([])
})
