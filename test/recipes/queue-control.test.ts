import { rmSync } from 'node:fs'
import { H3 } from 'h3'
import { afterEach, beforeEach, expect, it, vi } from 'vitest'
import { startRecipes } from '../../src/recipes/background.ts'
import { enqueueEventFires } from '../../src/recipes/claims.ts'
import { recipeEngineFor } from '../../src/recipes/engine.ts'
import { DISCARDED, retryRecipeEvents } from '../../src/recipes/queue-control.ts'
import { registerRecipeRoutes } from '../../src/recipes/routes.ts'
import { listRuns } from '../../src/recipes/runner.ts'
import { createKvState, recipeStateNamespace } from '../../src/recipes/state.ts'
import { registerConsumers } from '../../src/pipeline.ts'
import { registerBacklogMetrics } from '../../src/backlog-metrics.ts'
import { createManualClock, type ManualClock } from '../../src/utils/clock.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { cliEnv, runCli } from '../webhooks/helpers.ts'
import { CRM_RECIPE, deliver, processed, STEADY_RECIPE, storeEvents, tempRecipesDir } from './helpers.ts'

const ADMIN_TOKEN = 'a-long-admin-token-for-recipe-queues'
const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }

/**
 * An event recipe's queue, run by hand: its dead events queued again once the cause is fixed (`recipes retry`), and
 * the queue of a recipe whose file is gone given up (`recipes discard`) — from the CLI and the admin routes.
 */
describeEachDialect('recipe queues: retry and discard', (dialect) => {
  let folder: ReturnType<typeof tempRecipesDir>
  let clock: ManualClock
  let rt: TestRuntime
  let app: H3
  const cleanups: Array<() => Promise<void> | void> = []

  beforeEach(async () => {
    folder = tempRecipesDir()
    clock = createManualClock('2026-01-01T00:00:00Z')
    rt = await createTestRuntime({ dialect, clock, env: { RECIPES_DIR: folder.dir, RECIPES_TIMEZONE: 'UTC', PROCESSING_MAX_ATTEMPTS: '1', ADMIN_TOKEN } })
    app = new H3()
    registerRecipeRoutes(app, rt)
  })
  afterEach(async () => {
    for (const fn of cleanups.reverse()) await fn()
    cleanups.length = 0
    await rt.close()
    folder.cleanup()
  })

  const env = () => cliEnv(rt, { RECIPES_DIR: folder.dir, RECIPES_TYPECHECK: 'false' })
  const post = (path: string, body?: unknown) =>
    app.fetch(new Request(`http://localhost${path}`, { method: 'POST', headers: admin, ...(body === undefined ? {} : { body: JSON.stringify(body) }) }))
  const fires = async (recipe: string) =>
    (await rt.store.db.selectFrom('recipe_event_fires').select(['event_id', 'status', 'attempts', 'last_error']).where('recipe', '=', recipe).orderBy('event_id').execute()).map((f) => [f.event_id, f.status, f.last_error])

  it('queues again the events a recipe gave up on, once it can run them: each runs once, in a batch, and the others stay as they were', async () => {
    folder.write('crm', CRM_RECIPE)
    folder.write('steady', STEADY_RECIPE)
    registerConsumers(rt, { recipes: recipeEngineFor(rt) })
    cleanups.push(await startRecipes(rt, { watch: false }))
    await deliver(rt, [processed('evt_1', 'call.no_answer', 'c1'), processed('evt_2', 'call.no_answer', 'c2')])
    // Both recipes done with these before the clock moves on (a run still going then could read as abandoned).
    await vi.waitFor(async () => {
      await recipeEngineFor(rt).idle()
      expect([(await fires('crm')).map((f) => f[1]), (await fires('steady')).map((f) => f[1])]).toEqual([['dead', 'dead'], ['done', 'done']])
    })
    // A minute, not hours: the manual clock fires every timer on the way (the engine's sweep runs each second).
    await clock.advance(60_000)
    await deliver(rt, [processed('evt_3', 'call.no_answer', 'c3')])
    await vi.waitFor(async () => {
      await clock.advance(5_000)
      await recipeEngineFor(rt).idle()
      expect((await fires('crm')).map((f) => f[1])).toEqual(['dead', 'dead', 'dead'])
    })
    const list = await runCli(['recipes', 'list', '--json'], env())
    expect((JSON.parse(list.out) as Array<{ name: string; queue: unknown; removed: boolean }>).map((r) => [r.name, r.queue, r.removed])).toEqual([
      ['crm', { queued: 0, dead: 3 }, false],
      ['steady', { queued: 0, dead: 0 }, false],
    ])
    const text = await runCli(['recipes', 'list'], env())
    expect(text.out).toContain('crm: 3 events given up on after their retries; once the cause is fixed, run them again: recipes retry crm')

    // A range that holds none of them, a backwards one, an unparsable one.
    expect(JSON.parse((await runCli(['recipes', 'retry', 'crm', '--since', '2026-01-02', '--json'], env())).out)).toEqual({ queued: 0 })
    const backwards = await runCli(['recipes', 'retry', 'crm', '--since', '2026-01-02', '--until', '2026-01-01'], env())
    expect([backwards.code, backwards.err.trim()]).toEqual([2, 'error: --until must be after --since'])
    const bad = await post('/admin/recipes/crm/retry', { since: 'March 7' })
    expect(bad.status).toBe(400)
    expect((await post('/admin/recipes/crm/retry', [1])).status).toBe(400)

    // The CRM is back: the first two (queued in the first minute) from the admin route, the last from the CLI.
    await createKvState(rt, recipeStateNamespace('crm')).set('up', true)
    const early = await post('/admin/recipes/crm/retry', { until: '2026-01-01T00:00:30Z' })
    expect([early.status, await early.json()]).toEqual([202, { data: { queued: 2 } }])
    await vi.waitFor(async () => {
      await clock.advance(1_000)
      await recipeEngineFor(rt).idle()
      expect((await fires('crm')).map((f) => f[1])).toEqual(['done', 'done', 'dead'])
    })
    const rest = await runCli(['recipes', 'retry', 'crm'], env())
    expect([rest.code, rest.out]).toEqual([0, 'crm: 1 events queued again; the running service runs them within a second, each once\n'])
    await vi.waitFor(async () => {
      await clock.advance(1_000)
      await recipeEngineFor(rt).idle()
      expect((await fires('crm')).map((f) => f[1])).toEqual(['done', 'done', 'done'])
    })
    // Each once: the two revived together ran as one batch; nothing is left to retry.
    const succeeded = (await listRuns(rt, { recipe: 'crm', limit: 100 })).filter((r) => r.status === 'succeeded').map((r) => r.summary).reverse()
    expect(succeeded).toEqual(['evt_1,evt_2', 'evt_3'])
    expect(JSON.parse((await runCli(['recipes', 'retry', 'crm', '--json'], env())).out)).toEqual({ queued: 0 })
    expect((await listRuns(rt, { recipe: 'steady', limit: 100 })).map((r) => r.summary).reverse()).toEqual(['evt_1,evt_2', 'evt_3'])
    expect(await fires('steady')).toEqual([['evt_1', 'done', null], ['evt_2', 'done', null], ['evt_3', 'done', null]])

    const unknown = await runCli(['recipes', 'retry', 'nope'], env())
    expect([unknown.code, unknown.err]).toEqual([2, `error: no recipe named "nope" in ${folder.dir} (see: recipes list)\n`])
    expect((await post('/admin/recipes/nope/retry')).status).toBe(404)
  })

  it('gives up the events still waiting for a recipe whose file was removed, and refuses while the file is there', async () => {
    folder.write('steady', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'fine', on: ['call.no_answer'], run: () => 'ok' })
`)
    // `retired` subscribed until its file was deleted: two events waiting, one waiting to retry, one it ran.
    const pairs = ['evt_a', 'evt_b', 'evt_c', 'evt_d'].map((eventId) => ({ recipe: 'retired', eventId }))
    await enqueueEventFires(rt, [...pairs, { recipe: 'steady', eventId: 'evt_a' }])
    await rt.store.db.updateTable('recipe_event_fires').set({ status: 'failed', attempts: 1, last_error: 'CRM is down' }).where('recipe', '=', 'retired').where('event_id', '=', 'evt_c').execute()
    await rt.store.db.updateTable('recipe_event_fires').set({ status: 'done' }).where('recipe', '=', 'retired').where('event_id', '=', 'evt_d').execute()
    registerBacklogMetrics(rt, { role: () => 'all' })
    const ages = async () => {
      await new Promise((resolve) => setImmediate(resolve))
      return (await rt.metrics.metrics()).split('\n').filter((l) => l.startsWith('switchboard_recipe_events_oldest_age_seconds{')).map((l) => l.split(' ')[0])
    }
    expect(await ages()).toEqual(['switchboard_recipe_events_oldest_age_seconds{recipe="retired"}', 'switchboard_recipe_events_oldest_age_seconds{recipe="steady"}'])
    const text = await runCli(['recipes', 'list'], env())
    expect(text.out).toContain(`retired: no longer in ${folder.dir}, with 3 events still waiting that nothing runs: put the file back, or give them up: recipes discard retired`)
    // The JSON listings name it too, in the listing's shape.
    const listed = JSON.parse((await runCli(['recipes', 'list', '--json'], env())).out) as Array<{ name: string; removed: boolean; queue: unknown; file: unknown }>
    expect(listed.map((r) => [r.name, r.removed, r.queue, r.file])).toEqual([['steady', false, { queued: 1, dead: 0 }, `${folder.dir}/steady.ts`], ['retired', true, { queued: 3, dead: 0 }, null]])
    const overHttp = (await (await app.fetch(new Request('http://localhost/admin/recipes', { headers: admin }))).json()) as { data: typeof listed }
    expect(overHttp.data.map((r) => [r.name, r.removed])).toEqual([['steady', false], ['retired', true]])

    const present = await runCli(['recipes', 'discard', 'steady'], env())
    expect([present.code, present.err.trim()]).toEqual([2, `error: recipe "steady" in ${folder.dir} takes events (on: call.no_answer): its queue is live — remove the file (or its "on") first`])
    expect((await post('/admin/recipes/steady/discard')).status).toBe(409)
    const never = await runCli(['recipes', 'discard', 'nope'], env())
    expect([never.code, never.err.trim()]).toEqual([2, 'error: nothing was ever queued for a recipe named "nope" (see: recipes list)'])
    expect((await post('/admin/recipes/nope/discard')).status).toBe(404)
    // Retrying a removed recipe's events would queue them for nothing.
    const retry = await runCli(['recipes', 'retry', 'retired'], env())
    expect([retry.code, retry.err.trim()]).toEqual([2, `error: recipe "retired" is no longer in ${folder.dir}: nothing would run its events (put the file back first, or give them up: recipes discard retired)`])
    expect((await post('/admin/recipes/retired/retry')).status).toBe(409)

    const discarded = await runCli(['recipes', 'discard', 'retired', '--json'], env())
    expect([discarded.code, JSON.parse(discarded.out)]).toEqual([0, { discarded: 3 }])
    expect(await fires('retired')).toEqual([['evt_a', 'dead', DISCARDED], ['evt_b', 'dead', DISCARDED], ['evt_c', 'dead', DISCARDED], ['evt_d', 'done', null]])
    expect(await fires('steady')).toEqual([['evt_a', 'pending', null]])
    expect(await ages()).toEqual(['switchboard_recipe_events_oldest_age_seconds{recipe="steady"}'])
    expect(await (await post('/admin/recipes/retired/discard')).json()).toEqual({ data: { discarded: 0 } })
    expect((await runCli(['recipes', 'list'], env())).out).not.toContain('retired')

    // The file comes back: its given-up events can be run after all.
    folder.write('retired', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'back', on: ['call.no_answer'], run: () => 'ok' })
`)
    // Only events still stored can run again: none of these is yet (as after the retention purge).
    expect(JSON.parse((await runCli(['recipes', 'retry', 'retired', '--json'], env())).out)).toEqual({ queued: 0 })
    await storeEvents(rt, ['evt_a', 'evt_b', 'evt_c'].map((id) => processed(id, 'call.no_answer')))
    expect(JSON.parse((await runCli(['recipes', 'retry', 'retired', '--json'], env())).out)).toEqual({ queued: 3 })
    expect((await fires('retired')).map((f) => f[1])).toEqual(['pending', 'pending', 'pending', 'done'])
    rmSync(`${folder.dir}/retired.ts`)
  })

  it('walks each row once: events that fail again while a retry goes on are not queued again by it, nor counted twice', async () => {
    folder.write('crm', CRM_RECIPE)
    const ids = Array.from({ length: 9 }, (_, i) => `evt_w${i}`)
    await storeEvents(rt, ids.map((id) => processed(id, 'call.no_answer')))
    await enqueueEventFires(rt, ids.map((eventId) => ({ recipe: 'crm', eventId })))
    const db = rt.store.db
    await db.updateTable('recipe_event_fires').set({ status: 'dead', attempts: 1, last_error: 'CRM is down' }).execute()
    // Between chunks the running service takes the revived events and, the CRM still down, they die again.
    const failAgain = async () => {
      await db.updateTable('recipe_event_fires').set({ status: 'dead', attempts: 1, last_error: 'CRM is down' }).where('status', '=', 'pending').execute()
    }
    const queued = await retryRecipeEvents(rt, 'crm', {}, { chunk: 2, beforeChunk: failAgain, sleep: async () => {} })
    expect(queued).toBe(9)
    expect((await fires('crm')).filter((f) => f[1] === 'pending')).toHaveLength(1)
  })

  it('refuses to retry what nothing would run (a broken recipe, one that takes no events), and discards a queue its recipe no longer takes', async () => {
    folder.write('crm', `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'now a daily sync', schedule: '0 8 * * *', run: () => 'ok' })\n`)
    folder.write('half', `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'half written', run: () => {\n`)
    await storeEvents(rt, ['evt_x', 'evt_y'].map((id) => processed(id, 'call.no_answer')))
    await enqueueEventFires(rt, [{ recipe: 'crm', eventId: 'evt_x' }, { recipe: 'crm', eventId: 'evt_y' }, { recipe: 'half', eventId: 'evt_x' }])
    await rt.store.db.updateTable('recipe_event_fires').set({ status: 'dead' }).where('event_id', '=', 'evt_y').execute()

    const noEvents = await runCli(['recipes', 'retry', 'crm'], env())
    expect([noEvents.code, noEvents.err.trim()]).toEqual([2, 'error: recipe "crm" takes no events (its definition has no "on"): nothing would run its queue (give it up: recipes discard crm)'])
    expect((await post('/admin/recipes/crm/retry')).status).toBe(409)
    const broken = await runCli(['recipes', 'retry', 'half'], env())
    expect([broken.code, broken.err]).toEqual([2, expect.stringMatching(/^error: recipe "half" does not load: fix it first, then retry \(/)])
    expect((await post('/admin/recipes/half/discard')).status).toBe(409)
    expect((await runCli(['recipes', 'list'], env())).out).toContain('crm: takes no events now, with 1 still waiting that nothing runs: give them up: recipes discard crm')

    expect(await (await post('/admin/recipes/crm/discard')).json()).toEqual({ data: { discarded: 1 } })
    expect(await fires('crm')).toEqual([['evt_x', 'dead', DISCARDED], ['evt_y', 'dead', null]])
    expect(await fires('half')).toEqual([['evt_x', 'pending', null]])
  })

  // `recipes retry daily-report` (a scheduled recipe, never queued anything) advised `recipes discard daily-report`,
  // which then refused: "nothing was ever queued for a recipe named …".
  it('a recipe that takes no events and never had a queue has nothing to retry: no advice to discard it', async () => {
    folder.write('daily', `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'a daily sync', schedule: '0 8 * * *', run: () => 'ok' })\n`)
    const expected = 'recipe "daily" takes no events (its definition has no "on"): nothing was ever queued for it, so there is nothing to retry'
    const cli = await runCli(['recipes', 'retry', 'daily'], env())
    expect([cli.code, cli.err.trim()]).toEqual([2, `error: ${expected}`])
    const res = await post('/admin/recipes/daily/retry')
    expect(res.status).toBe(409)
    expect(await res.json()).toEqual({ error: { type: 'conflict', message: expected } })
    // And what the advice would have led to is refused as before.
    expect((await runCli(['recipes', 'discard', 'daily'], env())).code).toBe(2)
  })
})
