import { afterEach, beforeEach, expect, it, vi } from 'vitest'
import { releaseInstance } from '../../src/instances.ts'
import { enqueueEventFires } from '../../src/recipes/claims.ts'
import { createEventDispatch, FIRE_CLAIM_MS, type EventDispatch } from '../../src/recipes/event-dispatch.ts'
import type { LoadedRecipe } from '../../src/recipes/loader.ts'
import type { RecipeRun } from '../../src/recipes/runner.ts'
import type { Runtime } from '../../src/runtime.ts'
import { createManualClock, type ManualClock } from '../../src/utils/clock.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { FIXTURE_RECIPES_DIR } from '../helpers/recipes.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { openReplica, processed, storeEvents } from './helpers.ts'

/**
 * An interrupted event's retry runs alone (test/recipes/interrupted-isolated.test.ts): it waits for the runs in
 * progress to end, which may take RECIPE_TIMEOUT_SECONDS (300 s by default). Its events were held through that wait by
 * a claim nothing renewed (FIRE_CLAIM_MS, 10 s): another replica claimed them once it lapsed, and the retry then handed
 * them back as "lapsed (was this process paused?)"; a thread stopped meanwhile charged them an attempt for a run they
 * never began; and the retry's own wait for its recipe's turn was counted from that old claim. The events wait
 * unclaimed, and are claimed when the retry may run.
 */
const recipe = (name: string): LoadedRecipe => ({ name, file: `${name}.ts`, definition: { description: 'test', on: ['call.no_answer'], run: () => null }, error: undefined, timezone: 'UTC' })
const spinning = recipe('spinning')
const innocent = recipe('innocent')

describeEachDialect("an interrupted event's retry waiting for the runs in progress", (dialect) => {
  let clock: ManualClock
  let logs: ReturnType<typeof captureLogs>
  let rt: TestRuntime
  const cleanups: Array<() => Promise<void> | void> = []
  const log: string[] = []
  const gates = new Map<string, () => void>()
  /** When each run's events were claimed, as the dispatch told the run (its wait for its recipe's turn counts from it). */
  const claimedAt = new Map<string, number>()

  const dispatchOn = (runtime: Runtime, replica: string): EventDispatch => {
    const dispatch = createEventDispatch(runtime, {
      recipes: () => [spinning, innocent],
      subscriptions: (name) => (name === 'spinning' ? spinning : innocent).definition!.on,
      inProgress: async () => false,
      run: async (r: LoadedRecipe, batch: Array<{ eventId: string }>, at: number): Promise<RecipeRun> => {
        const label = `${r.name}:${batch.map((e) => e.eventId).join(',')}`
        log.push(`${replica} start ${label}`)
        claimedAt.set(label, at)
        await new Promise<void>((resolve) => gates.set(label, resolve))
        log.push(`${replica} end ${label}`)
        return { id: `run_${replica}_${label}`, recipe: r.name, trigger: 'event', eventId: null, dryRun: false, status: 'succeeded', startedAt: 0, endedAt: 0, summary: null, plan: [], planOmitted: {}, error: null }
      },
    })
    cleanups.push(async () => {
      for (const open of gates.values()) open()
      await dispatch.stop()
    })
    return dispatch
  }
  const finish = async (label: string) => {
    await vi.waitFor(() => expect(gates.has(label)).toBe(true))
    gates.get(label)!()
    gates.delete(label)
  }
  const fires = () => rt.store.db.selectFrom('recipe_event_fires').select(['recipe', 'status', 'attempts']).orderBy('recipe').execute()

  beforeEach(async () => {
    log.length = 0
    gates.clear()
    claimedAt.clear()
    clock = createManualClock('2026-03-01T10:00:00Z')
    logs = captureLogs()
    rt = await createTestRuntime({ dialect, clock, log: logs.log })
    await storeEvents(rt, [processed('evt_0', 'call.no_answer'), processed('evt_1', 'call.no_answer')])
    // spinning was running evt_0 when its thread stopped: the stopped thread's claims are given back and the attempt
    // charged (as the watchdog's restart does); the event is due again at 10:00:30, to be retried alone.
    await rt.store.db.insertInto('instances').values({ id: 'stopped-thread', process: 'gone', host: 'here', started_at: clock.now() }).execute()
    await enqueueEventFires(rt, [{ recipe: 'spinning', eventId: 'evt_0' }])
    await rt.store.db.updateTable('recipe_event_fires').set({ claimed_by: 'stopped-thread:recipes', claimed_until: clock.now() + 10_000 }).execute()
    await releaseInstance(rt, 'stopped-thread')
    // innocent's new event: its batch starts now and is still running when the retry falls due.
    await enqueueEventFires(rt, [{ recipe: 'innocent', eventId: 'evt_1' }])
  })
  afterEach(async () => {
    for (const fn of cleanups.reverse()) await fn()
    cleanups.length = 0
    await rt.close()
  })

  /** Starts this process's dispatch, innocent's batch running, and the retry of spinning's event waiting for it. */
  async function retryWaiting(): Promise<EventDispatch> {
    const dispatch = dispatchOn(rt, 'A')
    dispatch.start()
    await vi.waitFor(() => expect(log).toEqual(['A start innocent:evt_1']))
    await clock.advance(31_000)
    await vi.waitFor(() => expect(logs.find(/^the retry of spinning's interrupted run waits for the runs in progress/)).toHaveLength(1))
    return dispatch
  }

  /** Six times a claim's life on the clock, a second at a time: innocent's batch renews its claims; every sweep looks. */
  async function longerThanAClaim() {
    for (let i = 0; i < (6 * FIRE_CLAIM_MS) / 1_000; i++) await clock.advance(1_000)
  }

  it('runs its event once the run ends, however long past its first claim, its wait for its recipe counted from a claim taken then', async () => {
    const dispatch = await retryWaiting()
    await longerThanAClaim()
    expect(log).toEqual(['A start innocent:evt_1'])
    const endedAt = clock.now()
    await finish('innocent:evt_1')
    await finish('spinning:evt_0')
    await dispatch.idle()
    expect(log).toEqual(['A start innocent:evt_1', 'A end innocent:evt_1', 'A start spinning:evt_0', 'A end spinning:evt_0'])
    expect(claimedAt.get('spinning:evt_0')).toBeGreaterThanOrEqual(endedAt)
    expect(logs.find(/lapsed/)).toEqual([])
    // No attempt spent on the wait: the one the interruption charged.
    expect(await fires()).toEqual([{ recipe: 'innocent', status: 'done', attempts: 0 }, { recipe: 'spinning', status: 'done', attempts: 1 }])
  })

  it('with another replica sweeping the queue meanwhile, its event runs once, and nothing is handed back as lapsed', async () => {
    const dispatch = await retryWaiting()
    const other = dispatchOn(await openReplica(rt, { recipesDir: FIXTURE_RECIPES_DIR, clock, seed: 7, cleanups }), 'B')
    other.start()
    await longerThanAClaim()
    // Whichever replica runs it (the other one, which has nothing running, may take it at once), it runs once.
    await finish('spinning:evt_0')
    await finish('innocent:evt_1')
    await dispatch.idle()
    await other.idle()
    await longerThanAClaim()
    await Promise.all([dispatch.idle(), other.idle()])
    expect(log.filter((l) => l.endsWith(' start spinning:evt_0'))).toHaveLength(1)
    expect(log.filter((l) => l.endsWith(' start innocent:evt_1'))).toEqual(['A start innocent:evt_1'])
    expect(logs.find(/lapsed/)).toEqual([])
    expect(await fires()).toEqual([{ recipe: 'innocent', status: 'done', attempts: 0 }, { recipe: 'spinning', status: 'done', attempts: 1 }])
  })

  it('is not charged an attempt when the thread stops while it waits: the run in progress is', async () => {
    await retryWaiting()
    await longerThanAClaim()
    // innocent's run never yields: the watchdog stops the thread, and the restart gives back what it held.
    await releaseInstance(rt, rt.instanceId)
    expect(await fires()).toEqual([{ recipe: 'innocent', status: 'failed', attempts: 1 }, { recipe: 'spinning', status: 'failed', attempts: 1 }])
    expect(log).toEqual(['A start innocent:evt_1'])
  })
})
