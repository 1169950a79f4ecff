import { HTTPError } from 'h3'
import { afterEach, beforeEach, expect, it, vi } from 'vitest'
import { releaseInstance } from '../../src/instances.ts'
import { enqueueEventFires } from '../../src/recipes/claims.ts'
import { MANUAL_RETRY_WAIT_MS, recipeEngineFor } from '../../src/recipes/engine.ts'
import { runRecipeNow } from '../../src/recipes/run-now.ts'
import { listRuns } from '../../src/recipes/runner.ts'
import { createManualClock, type ManualClock } from '../../src/utils/clock.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { gatedRun, processed, storeEvents, tempRecipesDir, type GatedRuns } from './helpers.ts'

/**
 * An interrupted event's retry runs with no other recipe beside it (test/recipes/interrupted-isolated.test.ts), and
 * scheduled runs wait for it (interrupted-isolated-schedule.test.ts). Run now (the dashboard, `POST
 * /admin/recipes/:name/run`, run in the processing thread) did not: a manual or dry run started beside the retry, and
 * one that hung the thread interrupted it, the retry's recipe charged the attempt. It waits for the retry, up to
 * MANUAL_RETRY_WAIT_MS, and is then refused (409) — never run after its request was answered.
 */
type Shared = GatedRuns
const shared = globalThis as unknown as { __sbAloneWithManual?: Shared }

/** Notes what runs beside it, and waits until the test lets it go. */
const RUN = gatedRun('__sbAloneWithManual', "ctx.name + ':' + (ctx.dryRun ? 'dry' : ctx.trigger.type)")

describeEachDialect("Run now beside an interrupted event's retry", (dialect) => {
  let rt: TestRuntime
  let clock: ManualClock
  let logs: ReturnType<typeof captureLogs>
  let s: Shared
  const cleanups: Array<() => Promise<void> | void> = []

  beforeEach(async () => {
    s = { running: new Set(), log: [], gates: new Map() }
    shared.__sbAloneWithManual = s
    const folder = tempRecipesDir()
    cleanups.push(() => folder.cleanup())
    folder.write('spinning', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'stands for the one that never yields', on: ['call.no_answer'], ${RUN} })
`)
    folder.write('report', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'run by hand', ${RUN} })
`)
    clock = createManualClock('2026-03-01T10:00:00Z')
    logs = captureLogs()
    rt = await createTestRuntime({ dialect, clock, log: logs.log, env: { RECIPES_DIR: folder.dir, RECIPES_TIMEZONE: 'UTC' } })
    // The recipe was running an event when its thread stopped: the stopped thread's claims are given back and the
    // attempt charged (as the watchdog's restart does), and the event is due again 30 s later, to be retried alone.
    await storeEvents(rt, [processed('evt_1', 'call.no_answer')])
    await rt.store.db.insertInto('instances').values({ id: 'stopped-thread', process: 'gone', host: 'here', started_at: clock.now() }).execute()
    await enqueueEventFires(rt, [{ recipe: 'spinning', eventId: 'evt_1' }])
    await rt.store.db.updateTable('recipe_event_fires').set({ claimed_by: 'stopped-thread:recipes', claimed_until: clock.now() + 10_000 }).execute()
    await releaseInstance(rt, 'stopped-thread')
    // The engine Run now uses (src/recipes/run-now.ts runs it here: no processing thread in tests).
    const engine = recipeEngineFor(rt)
    cleanups.push(() => engine.stop())
    await engine.start()
  })

  afterEach(async () => {
    for (const open of s.gates.values()) open()
    for (const fn of cleanups.reverse()) await fn()
    cleanups.length = 0
    await rt.close()
    delete shared.__sbAloneWithManual
  })

  const finish = async (label: string) => {
    await vi.waitFor(() => expect(s.gates.has(label)).toBe(true))
    s.gates.get(label)!()
    s.gates.delete(label)
  }

  for (const dryRun of [false, true]) {
    const label = dryRun ? 'report:dry' : 'report:manual'
    it(`a ${dryRun ? 'dry' : 'manual'} run asked for while the retry runs alone waits for it, then runs`, async () => {
      // The retry falls due at 10:00:30 and runs alone.
      await clock.advance(31_000)
      await vi.waitFor(() => expect(s.log).toEqual(['start spinning:event beside []']))
      const asked = runRecipeNow(rt, 'report', dryRun)
      await vi.waitFor(() => expect(s.log.length > 1 || logs.find(/ of report waits for the retry of spinning/).length > 0).toBe(true))
      expect(s.log).toEqual(['start spinning:event beside []'])
      expect(logs.find(/ of report waits for the retry/)[0]).toMatchObject({
        recipe: 'report',
        waits_for: 'spinning',
        msg: `${dryRun ? 'dry' : 'manual'} run of report waits for the retry of spinning's interrupted run, which runs alone; it starts when that ends`,
      })
      await finish('spinning:event')
      await finish(label)
      expect(await asked).toMatchObject({ recipe: 'report', trigger: 'manual', dryRun, status: 'succeeded' })
      expect(s.log).toEqual(['start spinning:event beside []', 'end spinning:event', `start ${label} beside []`, `end ${label}`])
    })
  }

  it("the retry due while a manual run is going waits for it to end", async () => {
    await clock.advance(20_000)
    const asked = runRecipeNow(rt, 'report', false)
    await vi.waitFor(() => expect(s.log).toEqual(['start report:manual beside []']))
    // 10:00:30: the retry falls due while the manual run still goes.
    await clock.advance(11_000)
    await vi.waitFor(() => expect(s.log.length > 1 || logs.find(/^the retry of spinning's interrupted run waits/).length > 0).toBe(true))
    expect(s.log).toEqual(['start report:manual beside []'])
    await finish('report:manual')
    await asked
    await finish('spinning:event')
    await recipeEngineFor(rt).idle()
    expect(s.log).toEqual(['start report:manual beside []', 'end report:manual', 'start spinning:event beside []', 'end spinning:event'])
  })

  it('a run whose wait for the retry lasts past MANUAL_RETRY_WAIT_MS is refused with a 409 and never runs', async () => {
    await clock.advance(31_000)
    await vi.waitFor(() => expect(s.log).toEqual(['start spinning:event beside []']))
    const asked = runRecipeNow(rt, 'report', false).catch((error: unknown) => error)
    await vi.waitFor(() => expect(logs.find(/^manual run of report waits/)).toHaveLength(1))
    await clock.advance(MANUAL_RETRY_WAIT_MS)
    const refused = await asked
    expect(refused).toBeInstanceOf(HTTPError)
    expect(refused).toMatchObject({
      status: 409,
      message: `recipe "report" was not run: the retry of spinning's interrupted run, which runs with no other recipe beside it, was still going after 60 s; try again when it has finished`,
    })
    // The retry ends later: the refused run does not start then.
    await finish('spinning:event')
    await recipeEngineFor(rt).idle()
    expect(s.log).toEqual(['start spinning:event beside []', 'end spinning:event'])
    expect(await listRuns(rt, { recipe: 'report' })).toEqual([])
  })
})
