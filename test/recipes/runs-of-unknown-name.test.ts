import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/load.ts'
import { createRuntime, type Runtime } from '../../src/runtime.ts'
import { createApp } from '../../src/server.ts'
import { runCli } from '../webhooks/helpers.ts'
import { tempRecipesDir } from './helpers.ts'

/**
 * `recipes runs nosuch` printed "(none)", exit 0, and `GET /admin/recipes/nosuch/runs` answered 200 `{"data":[]}`: a
 * mistyped name looked like a recipe that never ran. A name is a recipe's when its file is in RECIPES_DIR, or when runs
 * are recorded for it (the history keeps a removed recipe's runs); any other is unknown: exit 2, 404.
 */
const RECIPE = `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'runs by hand', run: () => 'ok' })\n`

let rt: Runtime | undefined
let folder: ReturnType<typeof tempRecipesDir> | undefined
let dataDir: string | undefined
afterEach(async () => {
  await rt?.close()
  folder?.cleanup()
  if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  rt = folder = dataDir = undefined
})

it('runs of a name that is no recipe file and has no runs are an unknown recipe; a removed recipe still lists its runs', async () => {
  folder = tempRecipesDir()
  folder.write('fresh', RECIPE)
  const gone = folder.write('gone', RECIPE)
  dataDir = mkdtempSync(join(tmpdir(), 'sb-runs-unknown-'))
  const env = { DATA_DIR: dataDir, RECIPES_DIR: folder.dir, RECIPES_TYPECHECK: 'false', LOG_LEVEL: 'silent', ADMIN_TOKEN: 'runs-unknown-token-0123456789abc' }
  expect((await runCli(['recipes', 'run', 'gone', '--dry-run'], env)).code).toBe(0)
  rmSync(gone)

  const unknown = await runCli(['recipes', 'runs', 'nosuch'], env)
  expect([unknown.code, unknown.out, unknown.err]).toEqual([2, '', `error: no recipe named "nosuch" in ${folder.dir}, nor any run recorded for one (recipes: fresh)\n`])
  expect((await runCli(['recipes', 'runs', 'nosuch', '--json'], env)).code).toBe(2)
  const removed = await runCli(['recipes', 'runs', 'gone', '--json'], env)
  expect(removed.code).toBe(0)
  expect((JSON.parse(removed.out) as Array<{ recipe: string }>).map((r) => r.recipe)).toEqual(['gone'])
  // A recipe that has not run yet is no mistake.
  expect(await runCli(['recipes', 'runs', 'fresh'], env)).toMatchObject({ code: 0, err: '' })

  rt = await createRuntime(loadConfig({ env }))
  const app = createApp(rt)
  const get = (path: string) => app.fetch(new Request(`http://127.0.0.1${path}`, { headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } }))
  const res = await get('/admin/recipes/nosuch/runs')
  expect(res.status).toBe(404)
  expect(await res.json()).toEqual({ error: { type: 'not_found', message: `no recipe named "nosuch" in ${folder.dir}, nor any run recorded for one (recipes: fresh)` } })
  const kept = await get('/admin/recipes/gone/runs')
  expect(kept.status).toBe(200)
  expect(((await kept.json()) as { data: Array<{ recipe: string }> }).data.map((r) => r.recipe)).toEqual(['gone'])
  expect(await (await get('/admin/recipes/fresh/runs')).json()).toEqual({ data: [] })
})
