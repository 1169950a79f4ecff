import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { loadRecipes } from '../../src/recipes/loader.ts'
import { tempRecipesDir } from './helpers.ts'

// JSON goes through Node's require, which kept it: the service ran a recipe with `agents.json` as it was at the first
// load, edit after edit, while a fresh `recipes run` read the new one. CommonJS and .mjs files and packages are Node's
// own modules, kept for the process's life (the README says to restart after changing them).
const recipes = tempRecipesDir()
afterEach(() => recipes.cleanup())

async function values(): Promise<unknown> {
  const [loaded] = await loadRecipes(recipes.dir, 'UTC')
  expect(loaded!.error).toBeUndefined()
  return loaded!.definition!.run({} as never)
}

it('an edited JSON file or JavaScript (ESM) helper in the folder is read afresh on the next load', async () => {
  const write = (version: number) => {
    writeFileSync(join(recipes.dir, 'agents.json'), JSON.stringify({ version: `json-${version}` }))
    mkdirSync(join(recipes.dir, 'lib'), { recursive: true })
    writeFileSync(join(recipes.dir, 'lib', 'm.js'), `export const version = 'js-${version}'\n`)
  }
  write(1)
  recipes.write(
    'uses-files',
    `import { defineRecipe } from 'switchboard'
// @ts-ignore
import agents from './agents.json'
// @ts-ignore
import { version } from './lib/m.js'
export default defineRecipe({ description: 'reads its files', run: () => [agents.version, version] })
`,
  )
  expect(await values()).toEqual(['json-1', 'js-1'])
  write(2)
  expect(await values()).toEqual(['json-2', 'js-2'])
})
