import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { HTTPError } from 'h3'
import { afterEach, beforeEach, expect, it, vi } from 'vitest'
import { main } from '../../src/cli.ts'
import type { PipelineEvent } from '../../src/events/hooks.ts'
import { createRecipeEngine, RecipeRunningError, type RecipeEngine } from '../../src/recipes/engine.ts'
import { realRunInProgress } from '../../src/recipes/overlap.ts'
import { runRecipeNow } from '../../src/recipes/run-now.ts'
import { executeRun, getRun, listRunRecords, listRuns } from '../../src/recipes/runner.ts'
import type { Runtime } from '../../src/runtime.ts'
import type { WebhookEvent } from '../../src/upstream/schemas.ts'
import { createManualClock, type ManualClock } from '../../src/utils/clock.ts'
import { processIdentity } from '../../src/utils/process-identity.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { createRunHolds, openReplica, tempRecipesDir } from './helpers.ts'

/**
 * A recipe never runs beside itself, whichever process runs it: a real manual run ("Run now", `recipes run`) or an
 * event batch meets a real run going in another process; a dry run never conflicts with anything.
 */
const { hold, releaseAll, waitSource } = createRunHolds('__sbOverlapHolds')

const RECIPE = `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'reads the inbox and uploads a batch',
  schedule: '0 8 * * *',
  timezone: 'UTC',
  on: ['call.no_answer'],
  async run(ctx) {
    ${waitSource}
    return ctx.trigger.type + (ctx.dryRun ? ' (dry)' : '') + (ctx.trigger.events ? ':' + ctx.trigger.events.map((e) => e.eventId).join(',') : '')
  },
})
`

function noAnswer(eventId: string): PipelineEvent {
  const event: WebhookEvent = {
    event_id: eventId,
    event_type: 'call.no_answer',
    timestamp: '2026-01-01T10:00:00Z',
    data: {
      call: {
        agent_id: 101, call_parameters: { customer_phone: '+919876543215' }, conversation_id: 'conv_1', duration_seconds: 0,
        started_at: null, ended_at: '2026-01-01T10:00:00Z', failure_reason: null, from_phone: '+918035550101',
        to_phone: '+919876543215', recording_url: null, status: 'no_answer', trace_id: 'tr_1',
      },
      results: {},
    },
  }
  return { eventId, eventType: 'call.no_answer', target: 'formant', source: 'webhook', receivedAt: Date.parse('2026-01-01T10:00:01Z'), event }
}

describeEachDialect('recipe runs never overlap', (dialect) => {
  let folder: ReturnType<typeof tempRecipesDir>
  let clock: ManualClock
  let rt: TestRuntime
  const cleanups: Array<() => Promise<void> | void> = []

  /** Another process on the same database and clock (a replica, or the service beside a CLI). */
  const replica = (): Promise<Runtime> => openReplica(rt, { recipesDir: folder.dir, clock, seed: 11, env: { RECIPES_TYPECHECK: 'false' }, cleanups })
  const engineOf = (r: Runtime): RecipeEngine => {
    const engine = createRecipeEngine(r)
    cleanups.push(() => engine.stop())
    return engine
  }

  beforeEach(async () => {
    folder = tempRecipesDir()
    folder.write('batch', RECIPE)
    clock = createManualClock('2026-01-01T07:00:00Z')
    rt = await createTestRuntime({ dialect, clock, env: { RECIPES_DIR: folder.dir, RECIPES_TIMEZONE: 'UTC' } })
  })
  afterEach(async () => {
    releaseAll()
    for (const fn of cleanups.reverse()) await fn()
    cleanups.length = 0
    await rt.close()
    folder.cleanup()
  })

  it('a real manual run refuses while the recipe runs in another process, naming that run; a dry run goes ahead', async () => {
    const service = engineOf(rt)
    const h = hold('manual')
    const first = service.run('batch')
    await vi.waitFor(() => expect(h.started).toBe(true))

    const other = await replica()
    const refused = engineOf(other).run('batch')
    await expect(refused).rejects.toBeInstanceOf(RecipeRunningError)
    await expect(refused).rejects.toThrow(/^recipe "batch" is already running: a manual run started at 2026-01-01T07:00:00\.000Z in another process/)
    // The dashboard's Run now on that replica: a 409 with the same words.
    const viaHttp = await runRecipeNow(other, 'batch', false).then(() => undefined, (error: unknown) => error)
    expect(viaHttp).toBeInstanceOf(HTTPError)
    expect(viaHttp).toMatchObject({ status: 409, message: expect.stringMatching(/^recipe "batch" is already running: a manual run started at /) })
    // A dry run never conflicts.
    expect(await runRecipeNow(other, 'batch', true)).toMatchObject({ status: 'succeeded', dryRun: true, summary: 'manual (dry)' })

    h.release()
    expect((await first).summary).toBe('manual')
    // Once it has finished, the same request runs.
    expect((await runRecipeNow(other, 'batch', false)).status).toBe('succeeded')
    // All three in the same millisecond of the manual clock: their order is not the point, the refused runs left none.
    const runs = (await listRuns(rt, { recipe: 'batch' })).map((r) => `${r.status} ${String(r.summary)}`).sort()
    expect(runs).toEqual(['succeeded manual', 'succeeded manual', 'succeeded manual (dry)'])
  })

  it('recipes run fails with exit 1 and one line while the service is running the recipe', async () => {
    const service = engineOf(rt)
    const h = hold('manual')
    const first = service.run('batch')
    await vi.waitFor(() => expect(h.started).toBe(true))
    let out = ''
    let err = ''
    const env = { DATA_DIR: rt.dataDir, DATABASE_URL: rt.store.url, RECIPES_DIR: folder.dir, RECIPES_TIMEZONE: 'UTC', RECIPES_TYPECHECK: 'false', LOG_LEVEL: 'silent' }
    const cli = (...argv: string[]) => main(argv, { env, overrides: { clock }, stdout: (t) => void (out += t), stderr: (t) => void (err += t) })
    expect(await cli('recipes', 'run', 'batch')).toBe(1)
    expect(out).toBe('')
    expect(err).toMatch(/^error: recipe "batch" is already running: a manual run started at 2026-01-01T07:00:00\.000Z in another process \(run [^)]+\); try again when it has finished \(a dry run can go ahead\)\n$/)
    err = ''
    expect(await cli('recipes', 'run', 'batch', '--dry-run')).toBe(0)
    expect(out).toMatch(/^recipe batch: succeeded/)
    h.release()
    await first
    expect((await listRuns(rt, { recipe: 'batch' })).filter((r) => !r.dryRun).map((r) => r.summary)).toEqual(['manual'])
  })

  it('an event batch waits, still queued, while the recipe runs in another process, then runs once', async () => {
    const service = engineOf(rt)
    const h = hold('manual')
    const first = service.run('batch')
    await vi.waitFor(() => expect(h.started).toBe(true))

    const other = await replica()
    const engine = engineOf(other)
    await engine.start()
    await engine.enqueueEvents([noAnswer('evt_1')])
    await clock.advance(3_000)
    await engine.idle()
    const fires = async () =>
      (await rt.store.db.selectFrom('recipe_event_fires').select(['event_id', 'status', 'attempts', 'claimed_by']).execute()).map((f) => [f.event_id, f.status, Number(f.attempts), f.claimed_by])
    // Not run beside the manual run, not claimed, no attempt spent.
    expect((await listRuns(rt, { recipe: 'batch' })).map((r) => r.trigger)).toEqual(['manual'])
    expect(await fires()).toEqual([['evt_1', 'pending', 0, null]])

    h.release()
    await first
    await clock.advance(1_000)
    await engine.idle()
    const runs = (await listRuns(rt, { recipe: 'batch' })).reverse()
    expect(runs.map((r) => [r.trigger, r.status, r.summary])).toEqual([['manual', 'succeeded', 'manual'], ['event', 'succeeded', 'event:evt_1']])
    expect(runs[1]!.startedAt).toBeGreaterThanOrEqual(runs[0]!.endedAt!)
    expect(await fires()).toEqual([['evt_1', 'done', 0, null]])
  })

  it.runIf(processIdentity() !== undefined)('a run left running by a process that was killed does not hold the recipe back: it is closed as failed', async () => {
    // A process that ran the recipe and was killed mid-run (kill -9: its row still says running).
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'])
    await vi.waitFor(() => expect(child.pid && processIdentity(child.pid)).toBeTruthy())
    const killed = processIdentity(child.pid!)!
    child.kill('SIGKILL')
    await once(child, 'exit')
    await rt.store.db.insertInto('recipe_runs').values({
      id: 'run_killed', recipe: 'batch', trigger: 'cron', event_id: null, dry_run: 0, status: 'running', started_at: clock.now() - 60_000,
      ended_at: null, summary: null, plan: null, error: null, process: killed,
    }).execute()
    // A run of a live process (this one, as a replica would be) still counts as running.
    await rt.store.db.insertInto('recipe_runs').values({
      id: 'run_live', recipe: 'other', trigger: 'cron', event_id: null, dry_run: 0, status: 'running', started_at: clock.now() - 60_000,
      ended_at: null, summary: null, plan: null, error: null, process: processIdentity()!,
    }).execute()
    expect(await realRunInProgress(rt, 'other')).toMatchObject({ id: 'run_live' })

    const engine = engineOf(rt)
    expect((await engine.run('batch')).status).toBe('succeeded')
    const left = await rt.store.db.selectFrom('recipe_runs').select(['status', 'error']).where('id', '=', 'run_killed').executeTakeFirstOrThrow()
    expect(left).toEqual({ status: 'failed', error: 'the process running it stopped before it finished (killed or crashed)' })
  })

  it.runIf(processIdentity() !== undefined)('a run left running by a killed process, dry or real, reads failed in every listing (not running for an hour)', async () => {
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'])
    await vi.waitFor(() => expect(child.pid && processIdentity(child.pid)).toBeTruthy())
    const killed = `${processIdentity(child.pid!)!}/cli`
    child.kill('SIGKILL')
    await once(child, 'exit')
    const row = (id: string, dryRun: 0 | 1, process: string) => ({
      id, recipe: 'batch', trigger: 'manual', event_id: null, dry_run: dryRun, status: 'running', started_at: clock.now() - 60_000,
      ended_at: null, summary: null, plan: null, error: null, process,
    })
    // A dry run (`recipes run batch --dry-run`) and a real one whose command was killed; a live process's dry run.
    await rt.store.db.insertInto('recipe_runs').values([row('run_dry_killed', 1, killed), row('run_real_killed', 0, killed)]).execute()
    await rt.store.db.insertInto('recipe_runs').values({ ...row('run_dry_live', 1, `${processIdentity()!}/cli`), recipe: 'other' }).execute()
    const statuses = async () => Object.fromEntries((await listRuns(rt)).map((r) => [r.id, r.status]))
    const listed = engineOf(rt).list()
    expect((await listed).find((r) => r.name === 'batch')?.lastRun).toMatchObject({ id: 'run_real_killed', status: 'failed', error: 'the process running it stopped before it finished (killed or crashed)' })
    expect(await statuses()).toEqual({ run_dry_killed: 'failed', run_real_killed: 'failed', run_dry_live: 'running' })
    expect((await listRunRecords(rt, { recipe: 'batch' })).map((r) => [r.id, r.status, r.endedAt])).toEqual([
      ['run_real_killed', 'failed', clock.now()],
      ['run_dry_killed', 'failed', clock.now()],
    ])
    expect(await getRun(rt, 'other', 'run_dry_live')).toMatchObject({ status: 'running', endedAt: null })
  })

  it('two processes that both found nothing running cannot both start: the second meets the running slot before its code runs', async () => {
    // What a cron `recipes run` at the minute of the service's tick does: each looked, saw no run, and starts one.
    const engine = engineOf(rt)
    await engine.reload()
    const definition = engine.recipes().find((r) => r.name === 'batch')!.definition!
    const h = hold('manual')
    const first = executeRun(rt, 'batch', definition, { trigger: { type: 'manual' }, dryRun: false, timezone: 'UTC' })
    await vi.waitFor(() => expect(h.started).toBe(true))
    const other = await replica()
    const second = executeRun(other, 'batch', definition, { trigger: { type: 'manual' }, dryRun: false, timezone: 'UTC' })
    await expect(second).rejects.toBeInstanceOf(RecipeRunningError)
    await expect(second).rejects.toThrow(/^recipe "batch" is already running: a manual run started at /)
    // Refused before its code ran: no run of its own was recorded.
    expect((await listRuns(rt, { recipe: 'batch' })).map((r) => r.status)).toEqual(['running'])
    // A dry run never takes the slot.
    expect((await executeRun(other, 'batch', definition, { trigger: { type: 'manual' }, dryRun: true, timezone: 'UTC' })).status).toBe('succeeded')
    h.release()
    expect((await first).status).toBe('succeeded')
    // Once it has ended, the slot is free.
    expect((await executeRun(other, 'batch', definition, { trigger: { type: 'manual' }, dryRun: false, timezone: 'UTC' })).status).toBe('succeeded')
    expect((await listRuns(rt, { recipe: 'batch' })).map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'succeeded'])
  })

  it('a slot held by a run marked running for over an hour (a process that stopped elsewhere) is closed and taken', async () => {
    await rt.store.db.insertInto('recipe_runs').values({
      id: 'run_stale', recipe: 'batch', trigger: 'cron', event_id: null, dry_run: 0, status: 'running', started_at: clock.now() - 2 * 3_600_000,
      ended_at: null, summary: null, plan: null, error: null, process: null,
    }).execute()
    const engine = engineOf(rt)
    expect((await engine.run('batch')).status).toBe('succeeded')
    const left = await rt.store.db.selectFrom('recipe_runs').select(['status', 'error']).where('id', '=', 'run_stale').executeTakeFirstOrThrow()
    expect(left).toEqual({ status: 'failed', error: 'still marked running after 60 minutes: taken for a process that stopped' })
  })

  it('a dry run in progress does not make the scheduled tick be skipped', async () => {
    const engine = engineOf(rt)
    await engine.start()
    await clock.advanceTo(Date.parse('2026-01-01T07:59:58Z'))
    const h = hold('dry')
    const dry = engine.run('batch', { dryRun: true })
    await vi.waitFor(() => expect(h.started).toBe(true))
    await clock.advanceTo(Date.parse('2026-01-01T08:00:00Z'))
    await vi.waitFor(async () => expect((await listRuns(rt, { recipe: 'batch' })).find((r) => r.trigger === 'cron')?.status).toBe('succeeded'))
    h.release()
    expect((await dry).summary).toBe('manual (dry)')
    await engine.idle()
    expect((await listRuns(rt, { recipe: 'batch' })).filter((r) => r.status === 'skipped')).toEqual([])
  })

  it('a dry run waits for the real run in progress here, but never holds a real one back', async () => {
    const engine = engineOf(rt)
    // A real run in progress: a dry run waits for it (its plan then reads what the real run left).
    const real = hold('manual')
    const first = engine.run('batch')
    await vi.waitFor(() => expect(real.started).toBe(true))
    let dryDone = false
    const dry = engine.run('batch', { dryRun: true }).then((r) => ((dryDone = true), r))
    await clock.advance(1_000)
    expect(dryDone).toBe(false)
    real.release()
    await first
    expect((await dry).summary).toBe('manual (dry)')

    // A dry run in progress: a real run starts at once beside it.
    const held = hold('dry')
    const slowDry = engine.run('batch', { dryRun: true })
    await vi.waitFor(() => expect(held.started).toBe(true))
    let realDone = false
    const second = engine.run('batch').then((r) => ((realDone = true), r))
    await vi.waitFor(() => expect(realDone).toBe(true))
    expect((await second).summary).toBe('manual')
    held.release()
    await slowDry
  })
})
