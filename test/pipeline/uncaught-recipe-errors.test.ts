import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, expect, it, vi } from 'vitest'
import { startServer, type RunningServer } from '../../src/server.ts'
import { thrownByRecipeCode } from '../../src/recipes/uncaught-recipe-errors.ts'
import { TOKEN } from '../ui/helpers.ts'
import { tempRecipesDir } from '../recipes/helpers.ts'
import { signFormant } from '../../src/webhooks/index.ts'
import { makeEvent } from '../webhooks/helpers.ts'

/**
 * Recipe code that throws where nothing can catch it — a timer set by a file's top-level code, or left by a run — is
 * logged and counted, and the processing thread goes on: the file's timer ended every restarted thread as it loaded,
 * and no event was processed until the file was fixed.
 */
let server: RunningServer | undefined
let dataDir: string | undefined
const recipes = tempRecipesDir()
afterEach(async () => {
  await server?.close()
  if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  server = dataDir = undefined
})
afterAll(() => recipes.cleanup())

it.runIf(process.platform === 'linux')('a throwing timer of a recipe file and of a run: events are processed, the thread is never restarted, each throw is counted', async () => {
  recipes.write('top-level-timer', `import { defineRecipe } from 'switchboard'
setTimeout(() => { throw new Error('thrown by a timer the file set') }, 0)
export default defineRecipe({ description: 'sets a timer as it loads', schedule: '0 9 * * *', async run() {} })
`)
  recipes.write('run-timer', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'leaves a timer', on: ['call.no_answer'], async run(ctx) {
  setTimeout(() => { throw new Error('thrown by a timer the run left') }, 0)
  return { events: ctx.trigger.events.length }
} })
`)
  dataDir = mkdtempSync(join(tmpdir(), 'sb-uncaught-'))
  const secret = 'whsec_uncaught_test'
  server = await startServer({
    env: { PORT: '0', DATA_DIR: dataDir, RECIPES_DIR: recipes.dir, WEBHOOK_SECRET: secret, LOG_LEVEL: 'silent', ADMIN_TOKEN: TOKEN, RECONCILE_INTERVAL_SECONDS: '0', RECIPES_TYPECHECK: 'false' },
    processing: 'thread',
  })
  const db = server.rt.store.db
  for (const id of ['evt_one', 'evt_two']) {
    const body = JSON.stringify(makeEvent({ event_id: id, event_type: 'call.no_answer', timestamp: new Date().toISOString() }))
    const res = await fetch(`${server.url}/webhooks/formant`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-formantai-signature': signFormant(body, secret), 'x-formantai-timestamp': String(Math.floor(Date.now() / 1000)) } })
    expect(res.status).toBe(204)
    await vi.waitFor(async () => {
      expect(await db.selectFrom('recipe_event_fires').select('status').where('event_id', '=', id).executeTakeFirst()).toEqual({ status: 'done' })
    }, { timeout: 20_000, interval: 100 })
  }
  const metrics = async () => (await fetch(`${server!.url}/metrics`)).text()
  await vi.waitFor(async () => expect(await metrics()).toMatch(/^switchboard_recipe_uncaught_errors_total 3$/m), { timeout: 10_000, interval: 100 })
  const text = await metrics()
  expect(text).toMatch(/^switchboard_processing_thread_restarts_total 0$/m)
  expect(await db.selectFrom('recipe_runs').select(['status']).where('recipe', '=', 'run-timer').execute()).toEqual([{ status: 'succeeded' }, { status: 'succeeded' }])
}, 60_000)

it('tells recipe code by the outermost frame of the stack that is not Node’s own', () => {
  const stack = (...frames: string[]) => Object.assign(new Error('x'), { stack: ['Error: x', ...frames].join('\n') })
  const dir = '/srv/app/recipes'
  const timer = ['    at listOnTimeout (node:internal/timers:581:17)', '    at process.processTimers (node:internal/timers:519:7)']
  expect(thrownByRecipeCode(stack('    at Timeout._onTimeout (/srv/app/recipes/a.ts:2:25)', ...timer), [dir])).toBe(true)
  expect(thrownByRecipeCode(stack('    at Timeout._onTimeout (file:///srv/app/recipes/lib/b.ts:2:25)', ...timer), [dir])).toBe(true)
  // switchboard's code called by the recipe's callback threw: the callback is still the recipe's.
  expect(thrownByRecipeCode(stack('    at check (/srv/app/src/x.ts:1:1)', '    at Timeout._onTimeout (/srv/app/recipes/a.ts:2:25)', ...timer), [dir])).toBe(true)
  // A recipe's function called from switchboard's own callback: switchboard's.
  expect(thrownByRecipeCode(stack('    at run (/srv/app/recipes/a.ts:2:25)', '    at Timeout._onTimeout (/srv/app/src/engine.ts:9:9)', ...timer), [dir])).toBe(false)
  expect(thrownByRecipeCode(stack('    at Timeout._onTimeout (/srv/app/recipes-old/a.ts:2:25)', ...timer), [dir])).toBe(false)
  expect(thrownByRecipeCode('a string', [dir])).toBe(false)
})
