import { afterEach, expect, it, vi } from 'vitest'
import { registerInstance, releaseInstance } from '../../src/instances.ts'
import { enqueueEventFires } from '../../src/recipes/claims.ts'
import { createRecipeEngine } from '../../src/recipes/engine.ts'
import { listRuns } from '../../src/recipes/runner.ts'
import { createManualClock, type ManualClock } from '../../src/utils/clock.ts'
import { processIdentity } from '../../src/utils/process-identity.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { gatedRun, processed, storeEvents, tempRecipesDir, type GatedRuns } from './helpers.ts'

/**
 * An interrupted event's retry runs with no other recipe beside it (test/recipes/interrupted-isolated.test.ts), so
 * that the run that stops the thread again is the one that never yields. A scheduled run beside it took that apart: a
 * tick that hung the thread interrupted the retry, and the retry's recipe was charged the attempt. A tick due while
 * such a retry runs waits for it and then runs; a retry due while a tick runs waits for the tick.
 */
type Shared = GatedRuns
const shared = globalThis as unknown as { __sbAloneWithTicks?: Shared }

/** Notes what runs beside it, and waits until the test lets it go. */
const RUN = gatedRun('__sbAloneWithTicks', "ctx.name + ':' + ctx.trigger.type")

let rt: TestRuntime | undefined
const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const open of shared.__sbAloneWithTicks?.gates.values() ?? []) open()
  for (const fn of cleanups.reverse()) await fn()
  cleanups.length = 0
  await rt?.close()
  rt = undefined
  delete shared.__sbAloneWithTicks
})

async function setUp(start: string, schedule: string) {
  const s: Shared = { running: new Set(), log: [], gates: new Map() }
  shared.__sbAloneWithTicks = s
  const folder = tempRecipesDir()
  cleanups.push(() => folder.cleanup())
  folder.write('spinning', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'stands for the one that never yields', on: ['call.no_answer'], ${RUN} })
`)
  folder.write('nightly', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'scheduled', schedule: ${JSON.stringify(schedule)}, timezone: 'UTC', ${RUN} })
`)
  const clock = createManualClock(start)
  const logs = captureLogs()
  rt = await createTestRuntime({ clock, log: logs.log, env: { RECIPES_DIR: folder.dir, RECIPES_TIMEZONE: 'UTC' } })
  // The recipe was running an event when its thread stopped: the stopped thread's claims are given back and the
  // attempt charged (as the watchdog's restart does), and the event is due again 30 s later, to be retried alone.
  await storeEvents(rt, [processed('evt_1', 'call.no_answer')])
  await rt.store.db.insertInto('instances').values({ id: 'stopped-thread', process: 'gone', host: 'here', started_at: clock.now() }).execute()
  await enqueueEventFires(rt, [{ recipe: 'spinning', eventId: 'evt_1' }])
  await rt.store.db.updateTable('recipe_event_fires').set({ claimed_by: 'stopped-thread:recipes', claimed_until: clock.now() + 10_000 }).execute()
  await releaseInstance(rt, 'stopped-thread')
  const engine = createRecipeEngine(rt)
  cleanups.push(() => engine.stop())
  await engine.start()
  const finish = async (label: string) => {
    await vi.waitFor(() => expect(s.gates.has(label)).toBe(true))
    s.gates.get(label)!()
    s.gates.delete(label)
  }
  return { s, clock: clock as ManualClock, logs, engine, finish, rt }
}

it("a tick due while an interrupted event's retry runs alone waits for it, then runs", async () => {
  const { s, clock, logs, engine, finish, rt } = await setUp('2026-03-01T10:00:00Z', '1 10 * * *')
  // The retry falls due at 10:00:30 and runs alone.
  await clock.advance(31_000)
  await vi.waitFor(() => expect(s.log).toEqual(['start spinning:event beside []']))
  // 10:01, the tick: it waits instead of running beside the retry.
  await clock.advanceTo(Date.parse('2026-03-01T10:01:00Z'))
  await vi.waitFor(() => expect(s.log.length > 1 || logs.find(/^scheduled run of nightly waits/).length > 0).toBe(true))
  expect(s.log).toEqual(['start spinning:event beside []'])
  expect(logs.find(/^scheduled run of nightly waits/)[0]).toMatchObject({ recipe: 'nightly', waits_for: 'spinning' })
  // Once the retry has ended, the tick runs — late by the retry, not skipped.
  await finish('spinning:event')
  await finish('nightly:cron')
  await engine.idle()
  expect(s.log).toEqual(['start spinning:event beside []', 'end spinning:event', 'start nightly:cron beside []', 'end nightly:cron'])
  const [tick] = await listRuns(rt, { recipe: 'nightly' })
  expect(tick).toMatchObject({ trigger: 'cron', status: 'succeeded' })
  expect(await rt.store.db.selectFrom('recipe_event_fires').select(['status', 'attempts']).executeTakeFirst()).toEqual({ status: 'done', attempts: 1 })
})

it("an interrupted event's retry due while a tick runs waits for the tick to end", async () => {
  const { s, clock, logs, engine, finish } = await setUp('2026-03-01T09:59:50Z', '0 10 * * *')
  // 10:00, the tick runs; the retry falls due at 10:00:20, while it still does.
  await clock.advance(10_000)
  await vi.waitFor(() => expect(s.log).toEqual(['start nightly:cron beside []']))
  await clock.advance(21_000)
  await vi.waitFor(() => expect(s.log.length > 1 || logs.find(/^the retry of spinning's interrupted run waits/).length > 0).toBe(true))
  expect(s.log).toEqual(['start nightly:cron beside []'])
  await finish('nightly:cron')
  await finish('spinning:event')
  await engine.idle()
  expect(s.log).toEqual(['start nightly:cron beside []', 'end nightly:cron', 'start spinning:event beside []', 'end spinning:event'])
})

// A thread is told from the others by its process's identity (/proc): where there is none, nothing is registered.
it.skipIf(!processIdentity())('a tick that hangs its thread is recorded interrupted, named with its trigger by the line that lists the interrupted runs', async () => {
  const { s, clock, logs, rt } = await setUp('2026-03-01T09:59:50Z', '0 10 * * *')
  expect(await registerInstance(rt)).toBe(true)
  await clock.advance(10_000)
  await vi.waitFor(() => expect(s.log).toEqual(['start nightly:cron beside []']))
  // It never yields: the watchdog stops the thread, and the restart gives back what it held (src/processing-host.ts).
  await releaseInstance(rt, rt.instanceId)
  const [tick] = await listRuns(rt, { recipe: 'nightly' })
  expect(tick).toMatchObject({ trigger: 'cron', status: 'failed', error: 'interrupted: its process or processing thread stopped during the run' })
  expect(logs.find(/^recipe runs interrupted/)).toEqual([
    expect.objectContaining({
      msg: 'recipe runs interrupted (their thread or process stopped): nightly (cron); a scheduled or manual run stays failed and is not run again',
      runs: [{ recipe: 'nightly', run_id: tick!.id, trigger: 'cron' }],
    }),
  ])
})
