import { readdirSync } from 'node:fs'
import { basename } from 'node:path'
import { expect, it } from 'vitest'
import { loadRecipes } from '../../src/recipes/loader.ts'
import { installationCacheDir } from '../../src/utils/installation-cache.ts'
import { tempRecipesDir } from './helpers.ts'

const recipe = (description: string, helper = './lib/label.ts') => `import { defineRecipe } from 'switchboard'
import { label } from '${helper}'
export default defineRecipe({ description: label(${JSON.stringify(description)}), on: ['call.busy'], run: () => ({}) })
`

/** Compiled forms of this folder's recipes in the installation's cache (jiti names each after its folder and file). */
const compiled = (dir: string) => readdirSync(installationCacheDir('jiti')).filter((name) => name.startsWith(`${basename(dir)}-`))

it('recipes are compiled once and kept by content: an edit to a recipe or to its helper is what the next load runs', async () => {
  const folder = tempRecipesDir()
  try {
    folder.write('lib/label', `export const label = (text: string) => \`[one] \${text}\`\n`)
    folder.write('busy', recipe('calls back'))
    const [first] = await loadRecipes(folder.dir, 'UTC')
    expect(first?.definition?.description).toBe('[one] calls back')
    // Kept in the installation's folder, not the system's shared tmp.
    expect(compiled(folder.dir).some((name) => name.startsWith(`${basename(folder.dir)}-busy.`))).toBe(true)
    expect((await loadRecipes(folder.dir, 'UTC'))[0]?.definition?.description).toBe('[one] calls back')
    // Edited in place (the same length, the same second): the source's hash, not its time, says it changed.
    folder.write('busy', recipe('calls BACK'))
    expect((await loadRecipes(folder.dir, 'UTC'))[0]?.definition?.description).toBe('[one] calls BACK')
    folder.write('lib/label', `export const label = (text: string) => \`[two] \${text}\`\n`)
    expect((await loadRecipes(folder.dir, 'UTC'))[0]?.definition?.description).toBe('[two] calls BACK')
  } finally {
    folder.cleanup()
  }
})
