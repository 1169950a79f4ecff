import { afterEach, beforeEach, expect, it, vi } from 'vitest'
import { mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startRecipes } from '../../src/recipes/background.ts'
import { createRecipeEngine, recipeEngineFor } from '../../src/recipes/engine.ts'
import { listRuns } from '../../src/recipes/runner.ts'
import type { Runtime } from '../../src/runtime.ts'
import { createManualClock, type ManualClock } from '../../src/utils/clock.ts'
import type { PipelineEvent } from '../../src/events/hooks.ts'
import { registerConsumers } from '../../src/pipeline.ts'
import { requeueEvent } from '../../src/webhooks/processing.ts'
import { createKvState, recipeStateNamespace } from '../../src/recipes/state.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { CRM_RECIPE, deliver, openReplica, processed, STEADY_RECIPE, tempRecipesDir, tickRecipe } from './helpers.ts'

/** A run's summary is the JSON value the test recipe returned. */
type Summary = { at: string; tz: string; runs: number } & Record<string, unknown>

describeEachDialect('recipe engine', (dialect) => {
  let folder: ReturnType<typeof tempRecipesDir>
  let clock: ManualClock
  let rt: TestRuntime
  const cleanups: Array<() => Promise<void> | void> = []

  /** A second replica: its own runtime and connection, the same database and clock. */
  const replica = (): Promise<Runtime> => openReplica(rt, { recipesDir: folder.dir, clock, seed: 7, cleanups })

  beforeEach(async () => {
    folder = tempRecipesDir()
    clock = createManualClock('2026-01-01T00:00:00Z')
    rt = await createTestRuntime({ dialect, clock, env: { RECIPES_DIR: folder.dir, RECIPES_TIMEZONE: 'UTC' } })
  })
  afterEach(async () => {
    for (const fn of cleanups.reverse()) await fn()
    cleanups.length = 0
    await rt.close()
    folder.cleanup()
  })

  it('of two schedulers sharing a database, only one runs each tick', async () => {
    folder.write('sweep', tickRecipe({ schedule: '*/30 * * * *' }))
    const other = await replica()
    expect(other.instanceId).not.toBe(rt.instanceId)
    const a = createRecipeEngine(rt)
    const b = createRecipeEngine(other)
    cleanups.push(() => a.stop(), () => b.stop())
    await Promise.all([a.start(), b.start()])
    for (let i = 0; i < 8; i++) {
      await clock.advance(30 * 60_000)
      await Promise.all([a.idle(), b.idle()])
    }
    const runs = (await listRuns(rt, { recipe: 'sweep', limit: 100 })).reverse()
    expect(runs.map((r) => (r.summary as Summary).at)).toEqual(
      Array.from({ length: 8 }, (_, i) => new Date(Date.parse('2026-01-01T00:30:00Z') + i * 30 * 60_000).toISOString()),
    )
    expect(runs.every((r) => r.status === 'succeeded' && r.trigger === 'cron')).toBe(true)
    const owners = await rt.store.db.selectFrom('recipe_ticks').select(['tick_at', 'owner']).where('recipe', '=', 'sweep').execute()
    expect(owners).toHaveLength(8)
    expect(new Set(owners.map((o) => o.owner)).size).toBeGreaterThanOrEqual(1)
    expect(owners.every((o) => o.owner === rt.instanceId || o.owner === other.instanceId)).toBe(true)
  })

  it('a replica still waiting for its first type verdict leaves the ticks to one that has it (none skipped)', async () => {
    folder.write('sweep', tickRecipe({ schedule: '*/30 * * * *' }))
    const other = await replica()
    // The replica that starts with a cold verdict cache (a new version in a rolling deploy) is armed first,
    // so before the fix it won the claims, held the runs behind its type check and skipped the next ticks.
    const cold = createRecipeEngine(other, { typeCheck: true })
    const warm = createRecipeEngine(rt, { typeCheck: false })
    cleanups.push(() => cold.stop(), () => warm.stop())
    await cold.start()
    await warm.start()
    for (let i = 0; i < 3; i++) {
      await clock.advance(30 * 60_000)
      await warm.idle()
    }
    await cold.idle()
    const runs = (await listRuns(rt, { recipe: 'sweep', limit: 100 })).reverse()
    expect(runs.map((r) => [r.status, (r.summary as Summary | null)?.at])).toEqual(
      Array.from({ length: 3 }, (_, i) => ['succeeded', new Date(Date.parse('2026-01-01T00:30:00Z') + i * 30 * 60_000).toISOString()]),
    )
  })

  it('runs an event trigger on the batch that arrived together, once per event across redelivery, replay and replicas', async () => {
    folder.write('followup', `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'reacts to unanswered calls',
  on: ['call.no_answer', 'call.busy'],
  run(ctx) { return ctx.trigger.type + ':' + ctx.trigger.events!.map((e) => e.eventId + '/' + e.event.data.call.to_phone).join(',') + ':first=' + ctx.trigger.event?.eventId },
})
`)
    folder.write('completed', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'completed only', on: ['call.completed'], run: (ctx) => ctx.trigger.events!.length })
`)
    const other = await replica()
    for (const r of [rt, other]) {
      registerConsumers(r, { recipes: recipeEngineFor(r) })
      cleanups.push(await startRecipes(r, { watch: false }))
    }
    expect(rt.hooks.list().map((h) => h.name)).toContain('recipes')
    const a = processed('evt_a', 'call.no_answer', 'conv_a')
    const b = processed('evt_b', 'call.busy', 'conv_b')
    await deliver(rt, [a, b, processed('evt_c', 'call.completed')])
    await deliver(rt, [a]) // a duplicate delivery
    await deliver(other, [a, b]) // the same events processed on another replica (or replayed)
    await recipeEngineFor(rt).idle()
    await recipeEngineFor(other).idle()
    const runs = (await listRuns(rt, { recipe: 'followup' })).reverse()
    expect(runs.map((r) => [r.trigger, r.eventId, r.status, r.summary])).toEqual([
      ['event', 'evt_a', 'succeeded', 'event:evt_a/+919876543215,evt_b/+919876543215:first=evt_a'],
    ])
    expect((await listRuns(rt, { recipe: 'completed' })).map((r) => [r.eventId, r.summary])).toEqual([['evt_c', 1]])
    const fires = await rt.store.db.selectFrom('recipe_event_fires').select(['recipe', 'event_id', 'status', 'run_id']).orderBy('recipe').orderBy('event_id').execute()
    expect(fires.map((f) => [f.recipe, f.event_id, f.status])).toEqual([['completed', 'evt_c', 'done'], ['followup', 'evt_a', 'done'], ['followup', 'evt_b', 'done']])
    expect(fires.find((f) => f.event_id === 'evt_a')!.run_id).toBe(runs[0]!.id)
  })

  it('a recipe that stops loading keeps its events queued (as it last subscribed) and runs them once fixed', async () => {
    const source = (version: string) => `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'follow-ups', on: ['call.no_answer'], run: (ctx) => '${version}:' + ctx.trigger.events!.map((e) => e.eventId).join(',') })
`
    folder.write('followup', source('v1'))
    const engine = recipeEngineFor(rt)
    registerConsumers(rt, { recipes: engine })
    cleanups.push(await startRecipes(rt, { watch: false }))
    await deliver(rt, [processed('evt_1', 'call.no_answer', 'conv_1')])
    await engine.idle()

    folder.write('followup', 'export default {{')
    await engine.reload()
    expect(engine.recipes()[0]!.error).toMatch(/failed to load/)
    await deliver(rt, [processed('evt_2', 'call.no_answer', 'conv_2'), processed('evt_3', 'call.no_answer', 'conv_3')])
    await clock.advance(5_000)
    await engine.idle()
    const fires = async () => (await rt.store.db.selectFrom('recipe_event_fires').select(['event_id', 'status', 'attempts']).orderBy('event_id').execute()).map((f) => [f.event_id, f.status, Number(f.attempts)])
    expect(await fires()).toEqual([['evt_1', 'done', 0], ['evt_2', 'pending', 0], ['evt_3', 'pending', 0]])

    folder.write('followup', source('v2'))
    await engine.reload()
    await engine.idle()
    expect((await listRuns(rt, { recipe: 'followup' })).reverse().map((r) => [r.status, r.summary])).toEqual([
      ['succeeded', 'v1:evt_1'],
      ['succeeded', 'v2:evt_2,evt_3'],
    ])
    expect(await fires()).toEqual([['evt_1', 'done', 0], ['evt_2', 'done', 0], ['evt_3', 'done', 0]])
  })

  it('events queued before an edit narrowed its "on" are given up, not run: the recipe gets only the types it lists now', async () => {
    const source = (on: string[]) => `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'follow-ups', on: ${JSON.stringify(on)}, run: (ctx) => ctx.trigger.events!.map((e) => e.eventType).join(',') })
`
    folder.write('followup', source(['call.no_answer', 'call.busy']))
    const engine = recipeEngineFor(rt)
    registerConsumers(rt, { recipes: engine })
    cleanups.push(await startRecipes(rt, { watch: false }))
    // Queued while it was broken (as it last subscribed), then fixed with a narrower "on".
    folder.write('followup', 'export default {{')
    await engine.reload()
    await deliver(rt, [processed('evt_n1', 'call.no_answer', 'conv_n1'), processed('evt_b1', 'call.busy', 'conv_b1'), processed('evt_n2', 'call.no_answer', 'conv_n2')])
    await clock.advance(5_000)
    await engine.idle()
    folder.write('followup', source(['call.no_answer']))
    await engine.reload()
    await engine.idle()
    expect((await listRuns(rt, { recipe: 'followup' })).map((r) => [r.status, r.summary])).toEqual([['succeeded', 'call.no_answer,call.no_answer']])
    const fires = (await rt.store.db.selectFrom('recipe_event_fires').select(['event_id', 'status', 'last_error']).orderBy('event_id').execute()).map((f) => [f.event_id, f.status, f.last_error])
    expect(fires).toEqual([
      ['evt_b1', 'dead', 'given up: recipe "followup" no longer lists call.busy in its "on"'],
      ['evt_n1', 'done', null],
      ['evt_n2', 'done', null],
    ])
  })

  it('events claimed before a type error is found go back to the queue without spending an attempt', async () => {
    const source = (body: string) => `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'follow-ups', on: ['call.no_answer'], run: (ctx) => { ${body} } })
`
    folder.write('followup', source(`const n: number = 'not a number'; return n`))
    const engine = createRecipeEngine(rt, { typeCheck: true })
    registerConsumers(rt, { recipes: engine })
    cleanups.push(() => engine.stop())
    await engine.start()
    // Queued and claimed at once (the definition loaded); the run waits for the type verdict, which fails it.
    await deliver(rt, [processed('evt_1', 'call.no_answer', 'conv_1')])
    await engine.idle()
    expect(engine.recipes()[0]!.error).toMatch(/type error/)
    const fires = async () => (await rt.store.db.selectFrom('recipe_event_fires').select(['event_id', 'status', 'attempts', 'claimed_by']).execute()).map((f) => [f.event_id, f.status, Number(f.attempts), f.claimed_by])
    expect(await fires()).toEqual([['evt_1', 'pending', 0, null]])
    expect((await listRuns(rt, { recipe: 'followup' })).map((r) => r.status)).toEqual(['skipped'])
    // An edit elsewhere in the folder asks every verdict again: the batch is claimed again and found broken for the
    // same reason — back to the queue, with no second skipped run (one a save filled its last runs).
    folder.write('_helper', `export const unrelated = 1\n`)
    await engine.reload()
    await engine.idle()
    await clock.advance(1_000)
    await engine.idle()
    expect((await listRuns(rt, { recipe: 'followup' })).map((r) => r.status)).toEqual(['skipped'])
    expect(await fires()).toEqual([['evt_1', 'pending', 0, null]])

    folder.write('followup', source(`return 'fixed:' + ctx.trigger.events!.length`))
    await engine.reload()
    await engine.idle()
    await clock.advance(1_000)
    await engine.idle()
    expect((await listRuns(rt, { recipe: 'followup' })).map((r) => [r.status, r.summary])[0]).toEqual(['succeeded', 'fixed:1'])
    expect(await fires()).toEqual([['evt_1', 'done', 0, null]])
  })

  it('a named target\'s events reach recipes subscribed as <target>:<type>', async () => {
    await rt.close()
    rt = await createTestRuntime({ dialect, clock, env: { RECIPES_DIR: folder.dir, RECIPES_TIMEZONE: 'UTC', WEBHOOK_TARGETS: '{"crm":{"scheme":"standard","secrets":"whsec_Y3JtLXNlY3JldC1jcm0tc2VjcmV0LWNybS1zZWNyZXQ="}}' } })
    folder.write('crm', `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'CRM updates',
  on: ['crm:contact.updated'],
  run(ctx) { return ctx.trigger.events!.map((e) => e.target + ':' + e.eventType + ':' + (e.body as { id: string }).id).join(',') },
})
`)
    folder.write('calls', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'provider only', on: ['call.completed'], run: () => 'provider' })
`)
    registerConsumers(rt, { recipes: recipeEngineFor(rt) })
    cleanups.push(await startRecipes(rt, { watch: false }))
    const crm = (id: string, type: string): PipelineEvent => ({ kind: 'target', eventId: `msg_${id}`, eventType: type, target: 'crm', source: 'webhook', receivedAt: clock.now(), body: { id } })
    await deliver(rt, [crm('1', 'contact.updated'), crm('2', 'contact.deleted'), crm('3', 'contact.updated')])
    await recipeEngineFor(rt).idle()
    expect((await listRuns(rt, { recipe: 'crm' })).map((r) => r.summary)).toEqual(['crm:contact.updated:1,crm:contact.updated:3'])
    expect(await listRuns(rt, { recipe: 'calls' })).toEqual([])
  })

  it('a recipe that throws or hangs holds back only its own events: timed out, retried one by one, then done', async () => {
    await rt.close()
    rt = await createTestRuntime({ dialect, clock, env: { RECIPES_DIR: folder.dir, RECIPES_TIMEZONE: 'UTC', RECIPE_TIMEOUT_SECONDS: '30' } })
    folder.write('flaky', `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'fails on its first run',
  on: ['call.no_answer'],
  async run(ctx) {
    const n = ((await ctx.state.get<number>('runs')) ?? 0) + 1
    await ctx.state.set('runs', n)
    if (n === 1) throw new Error('CRM is down')
    return ctx.trigger.events!.map((e) => e.eventId).join(',')
  },
})
`)
    folder.write('hangs', `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'hangs on its first run',
  on: ['call.no_answer'],
  async run(ctx) {
    const n = ((await ctx.state.get<number>('runs')) ?? 0) + 1
    await ctx.state.set('runs', n)
    if (n === 1) await new Promise(() => {})
    return ctx.trigger.events!.map((e) => e.eventId).join(',')
  },
})
`)
    folder.write('steady', STEADY_RECIPE)
    registerConsumers(rt, { recipes: recipeEngineFor(rt) })
    cleanups.push(await startRecipes(rt, { watch: false }))
    // Stopping waits for runs in flight: should an assertion fail before the hung run timed out, time it out
    // (cleanups run last-in first) instead of holding the next tests behind a run the manual clock never ends.
    cleanups.push(() => clock.advance(30_000))
    await deliver(rt, [processed('evt_1', 'call.no_answer', 'c1'), processed('evt_2', 'call.no_answer', 'c2')])
    // The steady recipe is not held back by the other two.
    await vi.waitFor(async () => expect((await listRuns(rt, { recipe: 'steady' })).map((r) => r.summary)).toEqual(['evt_1,evt_2']))
    await vi.waitFor(async () => expect((await listRuns(rt, { recipe: 'flaky' })).map((r) => [r.status, r.error])).toEqual([['failed', expect.stringMatching(/^CRM is down \(at .*\/flaky\.ts:\d+:\d+\)$/)]]))
    // Each recipe claims its own events: on a loaded machine the hung run can start after the others ended.
    await vi.waitFor(async () => expect((await listRuns(rt, { recipe: 'hangs' })).map((r) => r.status)).toEqual(['running']))
    // The hung run times out; both failed batches are retried event by event after the backoff.
    await clock.advance(30_000)
    await vi.waitFor(async () => expect((await listRuns(rt, { recipe: 'hangs' })).at(-1)).toMatchObject({ status: 'failed', error: 'timed out after 30 s (RECIPE_TIMEOUT_SECONDS)' }))
    // The failure (and its next_attempt_at) is written after the run is recorded, so keep the clock moving
    // until the retries have landed: a fixed number of advances can all pass before that write on a slow database.
    const retried = async () => {
      for (const name of ['flaky', 'hangs']) {
        const runs = (await listRuns(rt, { recipe: name })).reverse()
        expect(runs[0]!.status).toBe('failed')
        // Each event succeeded exactly once after the failure (retried one by one; on a slow database a
        // retry claimed while the hung run still held the recipe may carry both).
        const succeeded = runs.filter((r) => r.status === 'succeeded').flatMap((r) => String(r.summary).split(','))
        expect(succeeded.sort()).toEqual(['evt_1', 'evt_2'])
      }
    }
    await vi.waitFor(async () => {
      await clock.advance(10_000)
      await recipeEngineFor(rt).idle()
      await retried()
    }, { timeout: 45_000, interval: 20 })
    const fires = await rt.store.db.selectFrom('recipe_event_fires').select(['recipe', 'status', 'attempts']).execute()
    expect(fires.every((f) => f.status === 'done')).toBe(true)
    expect(fires.filter((f) => f.recipe !== 'steady').every((f) => f.attempts >= 1)).toBe(true)
    // Postgres under CI's load: ~10 s of polling rounds on a busy host (under 1 s on SQLite), past the default 20 s once.
  }, 60_000)

  it('a replayed event runs again for a recipe that gave up on it (dead), and not for one that ran it', async () => {
    await rt.close()
    rt = await createTestRuntime({ dialect, clock, env: { RECIPES_DIR: folder.dir, RECIPES_TIMEZONE: 'UTC', PROCESSING_MAX_ATTEMPTS: '1' } })
    folder.write('crm', CRM_RECIPE)
    folder.write('steady', STEADY_RECIPE)
    registerConsumers(rt, { recipes: recipeEngineFor(rt) })
    cleanups.push(await startRecipes(rt, { watch: false }))
    await deliver(rt, [processed('evt_r', 'call.no_answer', 'c1')])
    await recipeEngineFor(rt).idle()
    const fireStatus = async () => Object.fromEntries((await rt.store.db.selectFrom('recipe_event_fires').select(['recipe', 'status']).execute()).map((f) => [f.recipe, f.status]))
    await vi.waitFor(async () => expect(await fireStatus()).toEqual({ crm: 'dead', steady: 'done' }))
    // The CRM is back; the operator replays the event.
    await createKvState(rt, recipeStateNamespace('crm')).set('up', true)
    expect(await requeueEvent(rt, 'evt_r')).toBe(true)
    // (No webhook worker runs here to process it again: the recipes' own poll finds the revived row.)
    await vi.waitFor(async () => {
      await clock.advance(5_000)
      await recipeEngineFor(rt).idle()
      expect(await fireStatus()).toEqual({ crm: 'done', steady: 'done' })
    })
    expect((await listRuns(rt, { recipe: 'crm' })).map((r) => [r.status, r.summary])).toEqual([['succeeded', 'evt_r'], ['failed', null]])
    expect((await listRuns(rt, { recipe: 'steady' })).map((r) => r.summary)).toEqual(['evt_r'])
  })

  it('reports a broken recipe by name, with the reason, and loads the others', async () => {
    folder.write('good', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'fine', schedule: '0 8 * * *', run: () => 'ok' })
`)
    folder.write('syntax', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'oops', run() { return ( } })
`)
    folder.write('throws', `// Needs the CRM's token.
throw new Error('missing API token for the CRM')
`)
    // Types on the line: the loader runs the file compiled, its columns not the file's (and line 1 behind jiti's wrapper).
    folder.write('typedthrow', `const token: string | undefined = process.env.NO_SUCH_TOKEN_SET; if (!token) throw new Error('no token')
export default 1
`)
    folder.write('badcron', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'x', schedule: '61 * * * *', run: () => 1 })
`)
    folder.write('badevent', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'x', on: ['call.no_anwser' as never], run: () => 1 })
`)
    folder.write('badtz', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'x', schedule: '0 8 * * *', timezone: 'Mars/Olympus', run: () => 1 })
`)
    folder.write('noexport', `export const nothing = 1
`)
    folder.write('_helper', `throw new Error('helpers starting with _ are not recipes')
`)
    const engine = createRecipeEngine(rt)
    cleanups.push(() => engine.stop())
    await engine.start()
    const list = await engine.list()
    const broken = Object.fromEntries(list.map((r) => [r.name, r.broken]))
    expect(Object.keys(broken).sort()).toEqual(['badcron', 'badevent', 'badtz', 'good', 'noexport', 'syntax', 'throws', 'typedthrow'])
    expect(broken.good).toBeNull()
    // Line and column as TypeScript and editors count them (1-based): the \`}\` after \`return (\`.
    expect(broken.syntax).toMatch(/^failed to load: .*syntax\.ts:2:69$/)
    // With where in the file its top-level code threw.
    expect(broken.throws).toMatch(/^failed to load: missing API token for the CRM \(at .*throws\.ts:2:7\)$/)
    // The \`new\` of \`throw new Error\` as the editor counts it (it was 1:259: jiti's wrapper and the stripped types counted).
    expect(broken.typedthrow).toMatch(/^failed to load: no token \(at .*typedthrow\.ts:1:84\)$/)
    expect(broken.badcron).toMatch(/`schedule` "61 \* \* \* \*" is not a valid cron pattern/)
    expect(broken.badevent).toMatch(/unknown event type "call\.no_anwser"/)
    expect(broken.badtz).toMatch(/`timezone` must be an IANA time zone/)
    expect(broken.noexport).toMatch(/export default defineRecipe/)
    expect(list.find((r) => r.name === 'good')?.nextRun).toBe(Date.parse('2026-01-01T08:00:00Z'))
    expect((await engine.run('good')).summary).toBe('ok')
    await expect(engine.run('syntax')).rejects.toThrow(/recipe "syntax" is broken: failed to load/)
    await expect(engine.run('nope')).rejects.toThrow(/no recipe named "nope"/)
    await clock.advanceTo(Date.parse('2026-01-01T08:00:00Z'))
    await engine.idle()
    expect((await listRuns(rt, { recipe: 'good' })).map((r) => r.trigger)).toEqual(['cron', 'manual'])
  })

  it('picks up an edited, added or broken-then-fixed recipe without a restart', async () => {
    const source = (version: string, schedule: string) => `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: '${version}', schedule: '${schedule}', run: () => '${version}' })
`
    folder.write('edited', source('v1', '0 * * * *'))
    const engine = recipeEngineFor(rt)
    cleanups.push(() => engine.stop())
    await engine.start({ watch: true })
    expect((await engine.run('edited')).summary).toBe('v1')
    expect((await engine.list())[0]!.nextRun).toBe(Date.parse('2026-01-01T01:00:00Z'))

    folder.write('edited', source('v2', '*/5 * * * *'))
    await vi.waitFor(() => expect(engine.recipes().find((r) => r.name === 'edited')?.definition?.description).toBe('v2'), { timeout: 5000 })
    expect((await engine.run('edited')).summary).toBe('v2')
    expect((await engine.list())[0]!.nextRun).toBe(Date.parse('2026-01-01T00:05:00Z'))
    await clock.advanceTo(Date.parse('2026-01-01T00:05:00Z'))
    await engine.idle()
    expect((await listRuns(rt, { recipe: 'edited' }))[0]).toMatchObject({ trigger: 'cron', summary: 'v2' })

    folder.write('edited', 'export default {{')
    await vi.waitFor(() => expect(engine.recipes().find((r) => r.name === 'edited')?.error).toMatch(/failed to load/), { timeout: 5000 })
    folder.write('edited', source('v3', '*/5 * * * *'))
    folder.write('added', source('new', '0 0 * * *'))
    await vi.waitFor(() => expect(engine.recipes().map((r) => `${r.name}:${r.definition?.description}`)).toEqual(['added:new', 'edited:v3']), { timeout: 5000 })
    expect((await engine.run('edited')).summary).toBe('v3')
    expect((await engine.run('added')).summary).toBe('new')
  })

  it('picks up an edited helper in a sub-folder (lib/) without a restart', async () => {
    mkdirSync(join(folder.dir, 'lib'), { recursive: true })
    writeFileSync(join(folder.dir, 'lib', 'greeting.ts'), "export const greeting = 'hello'\n")
    folder.write('greets', `import { defineRecipe } from 'switchboard'
import { greeting } from './lib/greeting.ts'
export default defineRecipe({ description: 'greets', run: () => greeting })
`)
    const engine = recipeEngineFor(rt)
    cleanups.push(() => engine.stop())
    await engine.start({ watch: true })
    expect((await engine.run('greets')).summary).toBe('hello')

    writeFileSync(join(folder.dir, 'lib', 'greeting.ts'), "export const greeting = 'bonjour'\n")
    await vi.waitFor(async () => expect((await engine.run('greets', { dryRun: true })).summary).toBe('bonjour'), { timeout: 5000 })
  })

  it('picks up every atomic save of a recipe (a new file renamed over it, as vim and sed -i save), not only the first', async () => {
    const description = (engine: ReturnType<typeof recipeEngineFor>) => engine.recipes().find((r) => r.name === 'edited')?.definition?.description
    const source = (version: string) => `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: '${version}', run: () => '${version}' })\n`
    const atomicSave = (text: string) => {
      const tmp = join(folder.dir, '.edited.ts.swp')
      writeFileSync(tmp, text)
      renameSync(tmp, join(folder.dir, 'edited.ts'))
    }
    folder.write('edited', source('v1'))
    const engine = recipeEngineFor(rt)
    cleanups.push(() => engine.stop())
    await engine.start({ watch: true })
    for (const version of ['v2', 'v3', 'v4']) {
      atomicSave(source(version))
      await vi.waitFor(() => expect(description(engine)).toBe(version), { timeout: 5000 })
    }
    writeFileSync(join(folder.dir, 'edited.ts'), source('v5'))
    await vi.waitFor(() => expect(description(engine)).toBe('v5'), { timeout: 5000 })
  })

  it('gives run(ctx) typed read access to stored conversations, events and calls, and persisted state', async () => {
    const t = Date.parse('2026-01-01T00:00:00Z')
    const db = rt.store.db
    for (const [id, status, ended] of [['c1', 'no_answer', t - 3_600_000], ['c2', 'completed', t - 60_000], ['c3', 'busy', t - 86_400_000 * 3]] as const) {
      await db.insertInto('conversations').values({
        conversation_id: id, agent_id: 101, contact_number: '+919876543215', status, terminal: 1, duration_seconds: 0,
        started_at: ended - 1000, ended_at: ended, failure_reason: null, trace_id: `tr_${id}`, from_phone: null, recording_url: null,
        transcript: JSON.stringify([{ role: 'agent', message: 'hello' }]), results: JSON.stringify({ intent: 'later' }),
        call_parameters: JSON.stringify({ customer_phone: '+919876543215' }),
        retry: JSON.stringify({ attempt_number: 1, is_final_attempt: true, max_attempts: 1, next_retry_at: null }), retry_context: null,
        last_event_at: ended, last_event_id: null, source: 'webhook', created_at: ended, updated_at: ended,
      }).execute()
    }
    const body = JSON.stringify(processed('evt_q', 'call.no_answer', 'c1').event)
    await db.insertInto('webhook_events').values({
      event_id: 'evt_q', target: 'formant', event_type: 'call.no_answer', conversation_id: 'c1', trace_id: 'tr_c1', agent_id: 101, body,
      headers: '{}', source: 'webhook', received_at: t - 3_000_000, status: 'processed', attempts: 1, next_attempt_at: t, claimed_by: null,
      claimed_until: null, last_error: null, processed_at: t,
    }).execute()
    await db.insertInto('calls').values({
      id: 'call_1', tenant: 'acme', agent_id: 101, customer_phone: '+919876543215', idempotency_key: 'k1', trace_id: 'tr_c1',
      conversation_id: 'c1', previous_conversation_id: null, scheduled_for: null,
      parameters: JSON.stringify([{ name: 'customer_phone', value: '+919876543215' }]), retry_context: null, metadata: null,
      recipe: 'nightly-batch', campaign: 'leads', status: 'initiated', error: null, created_at: t - 3_700_000, updated_at: t - 3_700_000,
    }).execute()
    folder.write('reader', `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'reads what is stored',
  async run(ctx) {
    const recent = await ctx.data.conversations({ status: ['no_answer', 'busy', 'completed'], endedSince: ctx.now.getTime() - 86_400_000 })
    const one = await ctx.data.conversation('c1')
    const events = await ctx.data.events({ type: 'call.no_answer' })
    const calls = await ctx.data.calls({ recipe: 'nightly-batch' })
    const runs = ((await ctx.state.get<number>('runs')) ?? 0) + 1
    await ctx.state.set('runs', runs)
    return {
      recent: recent.map((c) => c.conversation_id),
      transcript: one?.transcript?.[0]?.message,
      final: one?.retry?.is_final_attempt,
      phone: events[0]?.event.data.call.to_phone,
      callPhone: calls[0]?.parameters[0]?.value,
      missing: (await ctx.data.conversation('nope')) ?? null,
      runs,
    }
  },
})
`)
    const engine = createRecipeEngine(rt)
    cleanups.push(() => engine.stop())
    expect((await engine.run('reader')).summary).toEqual({
      recent: ['c2', 'c1'], transcript: 'hello', final: true, phone: '+919876543215', callPhone: '+919876543215', missing: null, runs: 1,
    })
    // A dry run reads the stored state and sees its own write, which is not kept (test/recipes/dry-run-state.test.ts).
    expect(((await engine.run('reader', { dryRun: true })).summary as Summary).runs).toBe(2)
    const stored = await db.selectFrom('kv_state').select(['namespace', 'key', 'value']).where('namespace', '=', 'recipe:reader').execute()
    expect(stored).toEqual([{ namespace: 'recipe:reader', key: 'runs', value: '1' }])
  })
})
