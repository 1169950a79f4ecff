import { afterEach, describe, expect, it, vi } from 'vitest'
import { startRecipes } from '../../src/recipes/background.ts'
import { createRecipeEngine, recipeEngineFor } from '../../src/recipes/engine.ts'
import { listRuns } from '../../src/recipes/runner.ts'
import { registerConsumers } from '../../src/pipeline.ts'
import { DIALECTS } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { deliver, processed, tempRecipesDir } from '../recipes/helpers.ts'

/**
 * Postgres refuses U+0000 in text ("invalid byte sequence for encoding UTF8: 0x00") and fails the statement. A UTF-16
 * file read as UTF-8 has one after every letter: a recipe whose error quoted its header left its run unrecorded —
 * `running` until the stale-run sweep, holding the recipe back meanwhile — and an event-triggered recipe's failure could
 * not be written to its events' queue rows. Every statement's text is stored as the database can store it (U+FFFD on
 * Postgres).
 */
describe.each(DIALECTS)('text with U+0000 on %s', (dialect) => {
  let rt: TestRuntime | undefined
  let folder: ReturnType<typeof tempRecipesDir> | undefined
  afterEach(async () => {
    await rt?.close()
    folder?.cleanup()
    rt = folder = undefined
  })

  it('a recipe error quoting it is recorded with the run, and the recipe runs again', async () => {
    folder = tempRecipesDir()
    folder.write('reads-utf16', `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'reads a UTF-16 export as UTF-8',
  run() { throw new Error('no phone column in the header "p\\0h\\0o\\0n\\0e\\0"') },
})
`)
    rt = await createTestRuntime({ dialect, env: { RECIPES_DIR: folder.dir } })
    const engine = createRecipeEngine(rt)
    try {
      const first = await engine.run('reads-utf16')
      expect(first.status).toBe('failed')
      const second = await engine.run('reads-utf16')
      expect(second.status).toBe('failed')
    } finally {
      await engine.stop()
    }
    const runs = await listRuns(rt, { recipe: 'reads-utf16' })
    const replaced = dialect === 'postgres' ? '\uFFFD' : '\0'
    expect(runs.map((r) => [r.status, r.error?.split(' (at ')[0]])).toEqual([
      ['failed', `no phone column in the header "p${replaced}h${replaced}o${replaced}n${replaced}e${replaced}"`],
      ['failed', `no phone column in the header "p${replaced}h${replaced}o${replaced}n${replaced}e${replaced}"`],
    ])
  })

  it('an event-triggered recipe failing with it: the batch\'s failure is recorded and its events wait for their retry', async () => {
    folder = tempRecipesDir()
    folder.write('reads-utf16', `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'quotes a UTF-16 value read as UTF-8',
  on: ['call.no_answer'],
  run() { throw new Error('CRM refused "a\\0b"') },
})
`)
    rt = await createTestRuntime({ dialect, env: { RECIPES_DIR: folder.dir } })
    registerConsumers(rt, { recipes: recipeEngineFor(rt) })
    const stop = await startRecipes(rt, { watch: false })
    try {
      await deliver(rt, [processed('evt_nul_1', 'call.no_answer', 'c1')])
      await vi.waitFor(async () => {
        const fire = await rt!.store.db.selectFrom('recipe_event_fires').select(['status', 'attempts', 'last_error']).where('event_id', '=', 'evt_nul_1').executeTakeFirst()
        expect(fire).toMatchObject({ status: 'failed', attempts: 1, last_error: expect.stringMatching(/^CRM refused "a.b"/) })
      })
      expect((await listRuns(rt, { recipe: 'reads-utf16' })).map((r) => r.status)).toEqual(['failed'])
    } finally {
      await stop()
    }
  })
})
