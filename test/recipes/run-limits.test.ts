import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { afterEach, beforeEach, expect, it, vi } from 'vitest'
import { loadConfig } from '../../src/config/load.ts'
import type { PipelineEvent } from '../../src/events/hooks.ts'
import { loadRecipeFile } from '../../src/recipes/loader.ts'
import { createRecipeEngine, type RecipeEngine, type RecipeEngineOptions } from '../../src/recipes/engine.ts'
import { RUN_STALE_MS } from '../../src/recipes/overlap.ts'
import { listRuns } from '../../src/recipes/runner.ts'
import { encodeSummary } from '../../src/recipes/summary.ts'
import { createRuntime, type Runtime } from '../../src/runtime.ts'
import type { WebhookEvent } from '../../src/upstream/schemas.ts'
import { createManualClock, type ManualClock } from '../../src/utils/clock.ts'
import { createSeededRandom } from '../../src/utils/random.ts'
import { describeEachDialect, openTestStore, type TestStore } from '../helpers/db.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { createRunHolds, tempRecipesDir } from './helpers.ts'

/**
 * Limits that keep one recipe from holding anything back for good: every run ends within RECIPE_TIMEOUT_SECONDS,
 * an event batch waits for its turn at most that long, a recipe file gets a time limit to load, and a run whose
 * outcome cannot be written as it is still gets its row closed.
 */
declare global {
  // Set by a test to make the recipe return something JSON cannot hold (see the summary test).
  var __sbRunLimitsMode: string | undefined
}

const { hold: hang, releaseAll, waitSource } = createRunHolds('__sbRunLimits')

const RECIPE = `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'a sweep and a reaction',
  schedule: '0 8 * * *',
  timezone: 'UTC',
  on: ['call.no_answer'],
  async run(ctx) {
    ${waitSource}
    return ctx.trigger.type + (ctx.trigger.events ? ':' + ctx.trigger.events.map((e) => e.eventId).join(',') : '')
  },
})
`

function noAnswer(eventId: string): PipelineEvent {
  const event: WebhookEvent = {
    event_id: eventId,
    event_type: 'call.no_answer',
    timestamp: '2026-01-01T08:00:00Z',
    data: {
      call: {
        agent_id: 101, call_parameters: { customer_phone: '+919876543215' }, conversation_id: 'conv_1', duration_seconds: 0,
        started_at: null, ended_at: '2026-01-01T08:00:00Z', failure_reason: null, from_phone: '+918035550101',
        to_phone: '+919876543215', recording_url: null, status: 'no_answer', trace_id: 'tr_1',
      },
      results: {},
    },
  }
  return { eventId, eventType: 'call.no_answer', target: 'formant', source: 'webhook', receivedAt: Date.parse('2026-01-01T08:00:01Z'), event }
}

const TIMED_OUT = 'timed out after 30 s (RECIPE_TIMEOUT_SECONDS)'

describeEachDialect('recipe run limits', (dialect) => {
  let folder: ReturnType<typeof tempRecipesDir>
  let clock: ManualClock
  let store: TestStore
  let dataDir: string
  let rt: Runtime
  let logs: ReturnType<typeof captureLogs>
  const engines: RecipeEngine[] = []

  const engineOf = (options: RecipeEngineOptions = {}): RecipeEngine => {
    const engine = createRecipeEngine(rt, options)
    engines.push(engine)
    return engine
  }
  const runs = async () => (await listRuns(rt, { recipe: 'sweep' })).reverse().map((r) => [r.trigger, r.status, r.error ?? r.summary])
  const fires = async () =>
    (await rt.store.db.selectFrom('recipe_event_fires').select(['event_id', 'status', 'attempts', 'claimed_by']).execute())
      .map((f) => [f.event_id, f.status, Number(f.attempts), f.claimed_by])

  beforeEach(async () => {
    folder = tempRecipesDir()
    folder.write('sweep', RECIPE)
    clock = createManualClock('2026-01-01T07:59:00Z')
    store = await openTestStore(dialect)
    dataDir = mkdtempSync(join(tmpdir(), 'sb-data-'))
    logs = captureLogs('info')
    const config = loadConfig({
      env: { DATA_DIR: dataDir, LOG_LEVEL: 'silent', RECIPES_DIR: folder.dir, RECIPES_TIMEZONE: 'UTC', RECIPES_TYPECHECK: 'false', RECIPE_TIMEOUT_SECONDS: '30' },
    })
    rt = await createRuntime(config, { store, skipMigrate: true, clock, random: createSeededRandom(5), log: logs.log })
  })
  afterEach(async () => {
    releaseAll()
    globalThis.__sbRunLimitsMode = undefined
    for (const engine of engines.splice(0)) await engine.stop()
    await rt.close()
    await store.close()
    folder.cleanup()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('a scheduled run that never settles is timed out and recorded failed; the events that came meanwhile then run', async () => {
    const engine = engineOf()
    await engine.start()
    const cron = hang('cron')
    await clock.advanceTo(Date.parse('2026-01-01T08:00:00Z'))
    await vi.waitFor(() => expect(cron.started).toBe(true))
    await engine.enqueueEvents([noAnswer('evt_1')])
    await clock.advance(5_000)
    // Not run beside the hung run, not claimed.
    expect(await runs()).toEqual([['cron', 'running', null]])
    expect(await fires()).toEqual([['evt_1', 'pending', 0, null]])

    await clock.advanceTo(Date.parse('2026-01-01T08:00:30Z'))
    await vi.waitFor(async () => {
      await clock.advance(1_000)
      expect(await fires()).toEqual([['evt_1', 'done', 0, null]])
    }, { interval: 20 })
    expect(await runs()).toEqual([['cron', 'failed', TIMED_OUT], ['event', 'succeeded', 'event:evt_1']])
    expect(logs.find(/^recipe "sweep" timed out after 30 s: run recorded failed; the recipe's next run goes ahead, without waiting for the timed-out code/)).toHaveLength(1)
  })

  it('a manual run is timed out too; the next run goes ahead while the timed-out code is still going, which is logged if it ends', async () => {
    const engine = engineOf()
    const manual = hang('manual')
    const first = engine.run('sweep')
    await vi.waitFor(() => expect(manual.started).toBe(true))
    await clock.advance(30_000)
    expect(await first).toMatchObject({ trigger: 'manual', status: 'failed', error: TIMED_OUT })
    // The hung code was not cancelled (JavaScript cannot): the queue does not wait for it.
    const second = await engine.run('sweep')
    expect(second).toMatchObject({ status: 'succeeded', summary: 'manual' })
        // A dry run that hangs is timed out as well (someone is waiting for its plan).
    const dry = hang('dry')
    const dryRun = engine.run('sweep', { dryRun: true })
    await vi.waitFor(() => expect(dry.started).toBe(true))
    await clock.advance(30_000)
    expect(await dryRun).toMatchObject({ dryRun: true, status: 'failed', error: TIMED_OUT })

    manual.release()
    await vi.waitFor(() => expect(logs.find(/^a timed-out run of recipe "sweep" ended after all; it stays recorded failed$/)).toHaveLength(1))
    expect((await listRuns(rt, { recipe: 'sweep' })).filter((r) => !r.dryRun).map((r) => r.status)).toEqual(['succeeded', 'failed'])
  })

  it('an event batch waiting behind runs in this process gives up after RECIPE_TIMEOUT_SECONDS and hands its events back untouched', async () => {
    const engine = engineOf()
    await engine.start()
    const cron = hang('cron')
    await clock.advanceTo(Date.parse('2026-01-01T08:00:00Z'))
    await vi.waitFor(() => expect(cron.started).toBe(true))
    // Someone presses Run now: queued behind the tick, and it hangs as well once it runs.
    const manual = hang('manual')
    const pressed = engine.run('sweep')
    await clock.advanceTo(Date.parse('2026-01-01T08:00:05Z'))
    // The tick's row as it reads after RUN_STALE_MS (taken for a crashed process): with RECIPE_TIMEOUT_SECONDS above
    // an hour that is what the dispatch meets, and it claims a batch that then waits behind this process's runs.
    await rt.store.db.updateTable('recipe_runs').set({ started_at: clock.now() - RUN_STALE_MS - 1 }).where('status', '=', 'running').execute()
    await engine.enqueueEvents([noAnswer('evt_1')])
    await vi.waitFor(async () => expect(await fires()).toEqual([['evt_1', 'pending', 0, `${rt.instanceId}:recipes`]]))

    // The tick times out and the manual run starts (and hangs): the batch is still behind it.
    await clock.advanceTo(Date.parse('2026-01-01T08:00:30Z'))
    await vi.waitFor(() => expect(manual.started).toBe(true))
    expect((await runs()).map((r) => r.slice(0, 2))).toEqual([['cron', 'failed'], ['manual', 'running']])
    // 30 s after it was claimed the batch gives up: not run, its events unclaimed, no attempt spent.
    await clock.advanceTo(Date.parse('2026-01-01T08:00:35Z'))
    await vi.waitFor(async () => expect(await fires()).toEqual([['evt_1', 'pending', 0, null]]), { interval: 20 })
    expect(logs.find(/^recipe "sweep" was still busy in this process after 30 s; the batch was not run; its events go back to its queue$/)).toHaveLength(1)
    // The sweep does not claim them again while the manual run's row says running, and the batch that gave up
    // left the queue as it was: a run asked for now still waits for the manual run, not beside it.
    let ranBeside = false
    const next = engine.run('sweep').then(
      (run) => ((ranBeside = clock.now() < Date.parse('2026-01-01T08:01:00Z')), run),
      // Started beside it, it would meet the manual run's row and be refused.
      (error: unknown) => ((ranBeside = true), error),
    )
    await clock.advance(5_000)
    expect(await fires()).toEqual([['evt_1', 'pending', 0, null]])

    // The manual run times out in its turn; the next one runs, then the events, once.
    await clock.advanceTo(Date.parse('2026-01-01T08:01:00Z'))
    expect(await pressed).toMatchObject({ status: 'failed', error: TIMED_OUT })
    expect(await next).toMatchObject({ status: 'succeeded', summary: 'manual' })
    expect(ranBeside).toBe(false)
    await vi.waitFor(async () => {
      await clock.advance(1_000)
      expect(await fires()).toEqual([['evt_1', 'done', 0, null]])
    }, { interval: 20 })
    const all = await runs()
    expect(all.slice(0, 2)).toEqual([['cron', 'failed', TIMED_OUT], ['manual', 'failed', TIMED_OUT]])
    // Both at 08:01:00 on a fast machine: one after the other, but their ids may list them either way.
    expect(all.slice(2).sort()).toEqual([['event', 'succeeded', 'event:evt_1'], ['manual', 'succeeded', 'manual']])
  })

  it('a file whose own synchronous code held the load past its limit is said to have held it, not to await for ever', async () => {
    await loadRecipeFile(folder.write('warm', RECIPE), 'UTC')
    // Busy past the limit and the margin (the CLI's watchdog stops such a loop at 15 s, after the 10 s limit's timer was
    // due), then a wait that never settles: the timer fires seconds late.
    folder.write('busy', `import { defineRecipe } from 'switchboard'
const until = Date.now() + 3_600
while (Date.now() < until) {}
await new Promise(() => {})
export default defineRecipe({ description: 'never loads', run: () => 'unreachable' })
`)
    const busy = await loadRecipeFile(join(folder.dir, 'busy.ts'), 'UTC', { timeLimitMs: 250 })
    expect(busy.error).toMatch(/^its top-level code held the event loop for \d+(\.\d)? s without returning \(a synchronous loop\?\) \(left out of later reloads until the file changes\)$/)
  })

  it('a recipe whose top-level code never finishes is broken after the load time limit; the others load and run', async () => {
    // Loading compiles the file (real time, not the clock's): warm jiti up so the healthy file loads well within the limit.
    await loadRecipeFile(folder.write('warm', RECIPE), 'UTC')
    folder.write('stuck', `import { defineRecipe } from 'switchboard'
;(globalThis as { stuckLoads?: number }).stuckLoads = ((globalThis as { stuckLoads?: number }).stuckLoads ?? 0) + 1
await new Promise(() => {})
export default defineRecipe({ description: 'never loads', on: ['call.no_answer'], run: () => 'unreachable' })
`)
    const engine = engineOf({ loadTimeLimitMs: 250 })
    await engine.start()
    const broken = (await engine.list()).map((r) => [r.name, r.broken])
    expect(broken).toEqual([
      ['stuck', 'did not finish loading within 250 ms: a top-level await that never settles? (left out of later reloads until the file changes)'],
      ['sweep', null],
      ['warm', null],
    ])
    expect(logs.find(/^recipe stuck is broken: did not finish loading within 250 ms/)).toHaveLength(1)
    // Events still reach the recipes that loaded (the consumer loads before queueing), and a reload returns.
    await engine.enqueueEvents([noAnswer('evt_1')])
    await engine.idle()
    expect(await runs()).toEqual([['event', 'succeeded', 'event:evt_1']])
    // Left out at once while unchanged, never imported again: each reload waited its time limit again (10 s per such
    // file, per edit of any recipe).
    const loads = () => (globalThis as { stuckLoads?: number }).stuckLoads
    const before = loads()
    expect(before).toBeGreaterThan(0)
    expect((await engine.reload()).map((r) => [r.name, r.error ?? null])).toEqual(broken)
    expect(loads()).toBe(before)
    expect(await engine.run('sweep')).toMatchObject({ status: 'succeeded', summary: 'manual' })
    // Changed, it is loaded again (and given its time limit again).
    folder.write('stuck', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'loads now', on: ['call.no_answer'], run: () => 'ran' })
`)
    expect((await engine.reload()).map((r) => [r.name, r.error ?? null])).toEqual([['stuck', null], ['sweep', null], ['warm', null]])
    // Said, as its breaking was: the log's last word on it was "broken".
    await vi.waitFor(() => expect(logs.find(/^recipe stuck loads again$/)).toHaveLength(1))
  })

  it('a run that ends while the database refuses every write is closed once it takes them again, not held running for an hour', async () => {
    const engine = engineOf()
    const manual = hang('manual')
    const first = engine.run('sweep')
    await vi.waitFor(() => expect(manual.started).toBe(true))
    // The database stops taking the run's writes as it ends (here: its table gone for a moment, on either dialect).
    await sql`alter table recipe_runs rename to recipe_runs_away`.execute(rt.store.db)
    manual.release()
    await expect(first).rejects.toThrow(/recipe_runs/)
    await sql`alter table recipe_runs_away rename to recipe_runs`.execute(rt.store.db)
    // Its row still reads running, and this process lives: nothing else would close it before RUN_STALE_MS.
    expect(await runs()).toEqual([['manual', 'running', null]])
    await expect(engine.run('sweep')).rejects.toThrow(/is already running/)
    await clock.advance(5_000)
    await vi.waitFor(async () => expect(await runs()).toEqual([['manual', 'failed', expect.stringMatching(/^could not record the run's outcome: .*recipe_runs/)]]))
    // Logged once the update's answer is back: the row can be read (another connection, on Postgres) a moment before.
    await vi.waitFor(() => expect(logs.find(/^a recipe run whose outcome could not be written is closed as failed now that the database takes it$/)).toHaveLength(1))
    expect(await engine.run('sweep')).toMatchObject({ status: 'succeeded', summary: 'manual' })
  })

  it('a batch whose outcome the database refuses for a moment is recorded once it takes it: its events do not run again', async () => {
    const engine = engineOf()
    await engine.start()
    const event = hang('event')
    await engine.enqueueEvents([noAnswer('evt_1')])
    await vi.waitFor(() => expect(event.started).toBe(true))
    // The database refuses the queue's writes as the run ends (its table gone for a moment, on either dialect).
    await sql`alter table recipe_event_fires rename to recipe_event_fires_away`.execute(rt.store.db)
    event.release()
    // The run is over and writing its outcome has failed once.
    await vi.waitFor(() => expect(logs.find(/^could not record a batch's outcome|^recipe event queue failed/).length).toBeGreaterThan(0))
    await sql`alter table recipe_event_fires_away rename to recipe_event_fires`.execute(rt.store.db)
    await vi.waitFor(async () => {
      await clock.advance(1_000)
      expect(await fires()).toEqual([['evt_1', 'done', 0, null]])
    }, { interval: 20 })
    // Past the claim's life (FIRE_CLAIM_MS): nothing is claimed or run again.
    await clock.advance(30_000)
    await engine.idle()
    expect(await runs()).toEqual([['event', 'succeeded', 'event:evt_1']])
    expect(logs.find(/^could not record a batch's outcome; trying again while its claims hold$/)).toHaveLength(1)
  })

  it('a summary that is not JSON is kept as far as it can be, and a run whose outcome cannot be written is still closed', async () => {
    folder.write('odd', `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'returns what it is told to',
  run(ctx) {
    const mode = globalThis.__sbRunLimitsMode
    if (mode === 'bare-bigint') return Object.assign(Object.create(null), { n: 1n })
    if (mode === 'cycle') { const a: Record<string, unknown> = { n: 2n }; a.self = a; return a }
    if (mode === 'throw-bare') throw Object.create(null)
    if (mode === 'throw-object') throw { code: 'E_QUOTA', detail: { left: 0 } }
    if (mode === 'plan-bigint') { (ctx.plan as unknown[]).push({ kind: 'custom', n: 3n }); return 'planned' }
    return 'plain'
  },
})
`)
    const engine = engineOf()
    const run = async (mode: string) => {
      // A second apart, so the runs list in the order they ran.
      await clock.advance(1_000)
      globalThis.__sbRunLimitsMode = mode
      return engine.run('odd')
    }
    // A null-prototype object has no text form (String() throws): its figures are kept, BigInts as digits.
    expect(await run('bare-bigint')).toMatchObject({ status: 'succeeded', summary: { n: '1' } })
    expect(await run('cycle')).toMatchObject({ status: 'succeeded', summary: { n: '2', self: '[Circular]' } })
    // What is not an Error is shown as Node shows it ("[object Object]" said nothing).
    expect(await run('throw-bare')).toMatchObject({ status: 'failed', error: 'threw a value that is not an Error: [Object: null prototype] {}' })
    expect(await run('throw-object')).toMatchObject({ status: 'failed', error: "threw a value that is not an Error: { code: 'E_QUOTA', detail: { left: 0 } }" })
    const unwritable = await run('plan-bigint')
    expect(unwritable).toMatchObject({ status: 'failed', summary: null, plan: [], error: expect.stringMatching(/^could not record the run's outcome: .*BigInt/) })
    const stored = (await listRuns(rt, { recipe: 'odd' })).map((r) => [r.status, r.error ?? r.summary])
    expect(stored).toEqual([
      ['failed', unwritable.error],
      ['failed', "threw a value that is not an Error: { code: 'E_QUOTA', detail: { left: 0 } }"],
      ['failed', 'threw a value that is not an Error: [Object: null prototype] {}'],
      ['succeeded', { n: '2', self: '[Circular]' }],
      ['succeeded', { n: '1' }],
    ])
  })
})

it('encodeSummary never throws', () => {
  const bare = Object.assign(Object.create(null) as object, { n: 1n })
  expect(encodeSummary(bare)).toBe('{"n":"1"}')
  expect(encodeSummary(1n)).toBe('"1"')
  // An object met twice is not a cycle; one met inside itself is.
  const shared = { a: 1 }
  expect(encodeSummary({ x: shared, y: [shared], n: 2n })).toBe('{"x":{"a":1},"y":[{"a":1}],"n":"2"}')
  const loop: Record<string, unknown> = { list: [] }
  ;(loop.list as unknown[]).push(loop)
  expect(encodeSummary(loop)).toBe('{"list":["[Circular]"]}')
  // A getter that throws stands in for its own key (the whole summary was "[object Object]").
  const hostile = { a: 1, get n(): number { throw new Error('no') } }
  expect(encodeSummary(hostile)).toBe('{"a":1,"n":"[reading it threw: no]"}')
  const nothing = Object.create(null) as object
  Object.defineProperty(nothing, 'n', { enumerable: true, get: () => { throw new Error('no') } })
  expect(encodeSummary(nothing)).toBe('{"n":"[reading it threw: no]"}')
  const revoked = Proxy.revocable({}, {})
  revoked.revoke()
  expect(encodeSummary({ p: revoked.proxy })).toMatch(/^\{"p":"\[could not be read: .+\]"\}$/)
})
