import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { startRecipes } from '../../src/recipes/background.ts'
import { recipeEngineFor } from '../../src/recipes/engine.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { createTestRuntime } from '../helpers/runtime.ts'

// The default RECIPES_DIR is ./recipes: `serve` run from a folder without one (a container's WORKDIR, an ops folder) has
// no recipes, which is no fault — it logged a warning with an ENOENT stack, "cannot watch the recipes folder".
it('a recipes folder not made yet is one info line, no warning and no stack; nothing runs until it is made', async () => {
  const parent = mkdtempSync(join(tmpdir(), 'sb-no-recipes-'))
  const dir = join(parent, 'recipes')
  // Present while the configuration is read (an explicit RECIPES_DIR must exist), gone when the service starts.
  mkdirSync(dir)
  const logs = captureLogs('info')
  const rt = await createTestRuntime({ env: { RECIPES_DIR: dir }, log: logs.log })
  rmSync(dir, { recursive: true })
  const stop = await startRecipes(rt, { watch: true })
  try {
    expect(logs.lines.filter((l) => (l.level as number) >= 40)).toEqual([])
    expect(logs.find(/recipes folder/)).toMatchObject([{ level: 30, dir, msg: `no recipes folder at ${dir}: none run until it is made (its recipes are then picked up within a few seconds)` }])
    expect(await recipeEngineFor(rt).list()).toEqual([])
  } finally {
    await stop()
    await rt.close()
    rmSync(parent, { recursive: true, force: true })
  }
})
