import { H3 } from 'h3'
import { afterEach, expect, it } from 'vitest'
import { registerRecipeRoutes } from '../../src/recipes/routes.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { CRM_RECIPE, tempRecipesDir } from './helpers.ts'

const ADMIN_TOKEN = 'a-long-admin-token-for-recipe-bodies'

let rt: TestRuntime | undefined
let folder: ReturnType<typeof tempRecipesDir> | undefined
afterEach(async () => {
  await rt?.close()
  folder?.cleanup()
  rt = folder = undefined
})

// A misspelled range key ignored would retry every event the recipe ever gave up on: it is answered instead.
it('POST /admin/recipes/:name/retry answers 400 naming an unknown key, with the key it likely meant', async () => {
  folder = tempRecipesDir()
  folder.write('crm', CRM_RECIPE)
  rt = await createTestRuntime({ env: { RECIPES_DIR: folder.dir, ADMIN_TOKEN } })
  const app = new H3()
  registerRecipeRoutes(app, rt)
  const retry = (body: string) =>
    app.fetch(new Request('http://localhost/admin/recipes/crm/retry', { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body }))
  const misspelled = await retry('{"untill":"2026-03-01T00:00:00Z"}')
  expect([misspelled.status, await misspelled.json()]).toEqual([
    400,
    { error: { message: 'body has an unknown key "untill" (did you mean "until"?): { "since": ISO, "until": ISO }', type: 'invalid_request' } },
  ])
  const ok = await retry('{"until":"2026-03-01T00:00:00Z"}')
  expect([ok.status, await ok.json()]).toEqual([202, { data: { queued: 0 } }])
})
