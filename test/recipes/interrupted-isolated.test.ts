import { afterEach, expect, it, vi } from 'vitest'
import { enqueueEventFires } from '../../src/recipes/claims.ts'
import { createEventDispatch, INTERRUPTED_ERROR_PREFIX } from '../../src/recipes/event-dispatch.ts'
import type { LoadedRecipe } from '../../src/recipes/loader.ts'
import type { RecipeRun } from '../../src/recipes/runner.ts'
import { releaseInstance } from '../../src/instances.ts'
import { pendingRow } from '../../src/webhooks/inbox.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { makeEvent } from '../webhooks/helpers.ts'

/**
 * A recipe that never yields stops the processing thread; the watchdog restarts it, and every recipe run in progress
 * then is interrupted — each of their events charged an attempt (src/instances.ts). Retried side by side, an innocent
 * recipe's events were interrupted again each time the looping one ran beside them, until they were dead. An
 * interrupted event's retry runs with no other batch beside it: before it starts, the batches running end; while it
 * runs, no other is claimed.
 */
let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})

const recipe = (name: string): LoadedRecipe => ({ name, file: `${name}.ts`, definition: { description: 'test', on: ['call.no_answer'], run: () => null }, error: undefined, timezone: 'UTC' })

it("an interrupted event's retry runs with no other recipe's batch beside it", async () => {
  const clock = createManualClock('2026-03-01T10:00:00Z')
  rt = await createTestRuntime({ clock })
  const spinning = recipe('spinning')
  const innocent = recipe('innocent')
  const events = [0, 1, 2].map(() => makeEvent({ event_type: 'call.no_answer' }))
  await rt.store.db.insertInto('webhook_events').values(events.map((e) => pendingRow({
    event_id: e.event_id, target: 'formant', event_type: e.event_type, conversation_id: null, trace_id: null, agent_id: null, body: JSON.stringify(e), headers: '{}', source: 'webhook',
  }, rt!.clock.now()))).execute()
  // Both recipes were running the first event when the thread stopped: the registry gives back the stopped
  // thread's claims and charges the attempt (as the watchdog's restart does).
  const stoppedThread = 'stopped-thread'
  await rt.store.db.insertInto('instances').values({ id: stoppedThread, process: 'gone', host: 'here', started_at: rt.clock.now() }).execute()
  await enqueueEventFires(rt, [{ recipe: 'spinning', eventId: events[0]!.event_id }, { recipe: 'innocent', eventId: events[0]!.event_id }])
  await rt.store.db.updateTable('recipe_event_fires').set({ claimed_by: `${stoppedThread}:recipes`, claimed_until: rt.clock.now() + 10_000 }).execute()
  await releaseInstance(rt, stoppedThread)
  const charged = await rt.store.db.selectFrom('recipe_event_fires').select(['recipe', 'status', 'attempts', 'last_error']).orderBy('recipe').execute()
  expect(charged.map((f) => [f.recipe, f.status, f.attempts])).toEqual([['innocent', 'failed', 1], ['spinning', 'failed', 1]])
  for (const f of charged) expect(f.last_error).toMatch(new RegExp(`^${INTERRUPTED_ERROR_PREFIX}`))
  // New events for the innocent recipe meanwhile.
  await enqueueEventFires(rt, events.slice(1).map((e) => ({ recipe: 'innocent', eventId: e.event_id })))
  await clock.advance(31_000)

  const running = new Set<string>()
  const log: string[] = []
  const gates = new Map<string, () => void>()
  const dispatch = createEventDispatch(rt, {
    recipes: () => [spinning, innocent],
    subscriptions: (name) => (name === 'spinning' ? spinning : innocent).definition!.on,
    inProgress: async () => false,
    run: async (r: LoadedRecipe, batch: Array<{ eventId: string }>): Promise<RecipeRun> => {
      const label = `${r.name}:${batch.map((e) => events.findIndex((x) => x.event_id === e.eventId)).join(',')}`
      log.push(`start ${label} beside [${[...running].join(' ')}]`)
      running.add(label)
      await new Promise<void>((resolve) => gates.set(label, resolve))
      running.delete(label)
      log.push(`end ${label}`)
      return { id: `run_${label}`, recipe: r.name, trigger: 'event', eventId: null, dryRun: false, status: 'succeeded', startedAt: 0, endedAt: 0, summary: null, plan: [], planOmitted: {}, error: null }
    },
  })
  const finish = async (label: string) => {
    await vi.waitFor(() => expect(gates.has(label)).toBe(true))
    gates.get(label)!()
    gates.delete(label)
  }
  try {
    dispatch.start()
    dispatch.wake()
    // Each interrupted event goes alone, whichever is claimed first; the innocent recipe's new events wait for them.
    await vi.waitFor(() => expect(log.length).toBe(1))
    const first = log[0]!.startsWith('start spinning') ? 'spinning:0' : 'innocent:0'
    const second = first === 'spinning:0' ? 'innocent:0' : 'spinning:0'
    await finish(first)
    await finish(second)
    await finish('innocent:1,2')
    await dispatch.idle()
    expect(log).toEqual([`start ${first} beside []`, `end ${first}`, `start ${second} beside []`, `end ${second}`, 'start innocent:1,2 beside []', 'end innocent:1,2'])
  } finally {
    for (const open of gates.values()) open()
    await dispatch.stop()
  }
})

it("a batch claimed while an interrupted event's retry is being claimed waits for the retry, instead of running beside it", async () => {
  const clock = createManualClock('2026-03-01T10:00:00Z')
  rt = await createTestRuntime({ clock })
  const spinning = recipe('spinning')
  const innocent = recipe('innocent')
  const events = [0, 1].map(() => makeEvent({ event_type: 'call.no_answer' }))
  await rt.store.db.insertInto('webhook_events').values(events.map((e) => pendingRow({
    event_id: e.event_id, target: 'formant', event_type: e.event_type, conversation_id: null, trace_id: null, agent_id: null, body: JSON.stringify(e), headers: '{}', source: 'webhook',
  }, rt!.clock.now()))).execute()
  const stoppedThread = 'stopped-thread'
  await rt.store.db.insertInto('instances').values({ id: stoppedThread, process: 'gone', host: 'here', started_at: rt.clock.now() }).execute()
  await enqueueEventFires(rt, [{ recipe: 'spinning', eventId: events[0]!.event_id }])
  await rt.store.db.updateTable('recipe_event_fires').set({ claimed_by: `${stoppedThread}:recipes`, claimed_until: rt.clock.now() + 10_000 }).execute()
  await releaseInstance(rt, stoppedThread)
  await clock.advance(31_000)
  // A new event for the other recipe: its batch and the retry are claimed at the same moment.
  await enqueueEventFires(rt, [{ recipe: 'innocent', eventId: events[1]!.event_id }])

  const running = new Set<string>()
  const log: string[] = []
  const gates = new Map<string, () => void>()
  const dispatch = createEventDispatch(rt, {
    recipes: () => [spinning, innocent],
    subscriptions: (name) => (name === 'spinning' ? spinning : innocent).definition!.on,
    inProgress: async () => false,
    run: async (r: LoadedRecipe, batch: Array<{ eventId: string }>): Promise<RecipeRun> => {
      const label = `${r.name}:${batch.map((e) => events.findIndex((x) => x.event_id === e.eventId)).join(',')}`
      log.push(`start ${label} beside [${[...running].join(' ')}]`)
      running.add(label)
      await new Promise<void>((resolve) => gates.set(label, resolve))
      running.delete(label)
      log.push(`end ${label}`)
      return { id: `run_${label}`, recipe: r.name, trigger: 'event', eventId: null, dryRun: false, status: 'succeeded', startedAt: 0, endedAt: 0, summary: null, plan: [], planOmitted: {}, error: null }
    },
  })
  const finish = async (label: string) => {
    await vi.waitFor(() => expect(gates.has(label)).toBe(true))
    gates.get(label)!()
    gates.delete(label)
  }
  try {
    dispatch.start()
    await vi.waitFor(() => expect(log.length).toBeGreaterThan(0))
    const first = log[0]!.startsWith('start spinning') ? 'spinning:0' : 'innocent:1'
    const second = first === 'spinning:0' ? 'innocent:1' : 'spinning:0'
    await finish(first)
    await finish(second)
    await dispatch.idle()
    expect(log).toEqual([`start ${first} beside []`, `end ${first}`, `start ${second} beside []`, `end ${second}`])
  } finally {
    for (const open of gates.values()) open()
    await dispatch.stop()
  }
})

// Every run in progress when the thread stopped was interrupted, its events charged an attempt; retried one event a
// run, an innocent recipe's interrupted batch of 325 took 325 retries, each waiting for the runs in progress (a hung
// recipe's, up to its time limit): hours before its new events had a turn. Retried together (alone, as before), the
// batch goes through at once; interrupted again, its events are the looping recipe's and go one by one.
it("an interrupted batch is retried together, alone; interrupted again, one event at a time", async () => {
  const clock = createManualClock('2026-03-01T10:00:00Z')
  rt = await createTestRuntime({ clock })
  const innocent = recipe('innocent')
  const events = [0, 1, 2, 3, 4].map(() => makeEvent({ event_type: 'call.no_answer' }))
  await rt.store.db.insertInto('webhook_events').values(events.map((e) => pendingRow({
    event_id: e.event_id, target: 'formant', event_type: e.event_type, conversation_id: null, trace_id: null, agent_id: null, body: JSON.stringify(e), headers: '{}', source: 'webhook',
  }, rt!.clock.now()))).execute()
  const interrupt = async (ids: string[], thread: string) => {
    await rt!.store.db.insertInto('instances').values({ id: thread, process: 'gone', host: 'here', started_at: rt!.clock.now() }).execute()
    await rt!.store.db.updateTable('recipe_event_fires').set({ claimed_by: `${thread}:recipes`, claimed_until: rt!.clock.now() + 10_000 }).where('event_id', 'in', ids).execute()
    await releaseInstance(rt!, thread)
  }
  // The first four were in the run the thread stopped in; the fifth had been interrupted before, alone (attempts 2).
  await enqueueEventFires(rt, events.map((e) => ({ recipe: 'innocent', eventId: e.event_id })))
  await interrupt(events.slice(0, 4).map((e) => e.event_id), 'stopped-1')
  await interrupt([events[4]!.event_id], 'stopped-2')
  await interrupt([events[4]!.event_id], 'stopped-3')
  expect((await rt.store.db.selectFrom('recipe_event_fires').select(['event_id', 'attempts']).execute()).map((f) => f.attempts).sort()).toEqual([1, 1, 1, 1, 2])
  await clock.advance(31_000)

  const log: string[] = []
  const dispatch = createEventDispatch(rt, {
    recipes: () => [innocent],
    subscriptions: () => innocent.definition!.on,
    inProgress: async () => false,
    run: async (r: LoadedRecipe, batch: Array<{ eventId: string }>): Promise<RecipeRun> => {
      const label = `${r.name}:${batch.map((e) => events.findIndex((x) => x.event_id === e.eventId)).join(',')}`
      log.push(label)
      return { id: `run_${label}`, recipe: r.name, trigger: 'event', eventId: null, dryRun: false, status: 'succeeded', startedAt: 0, endedAt: 0, summary: null, plan: [], planOmitted: {}, error: null }
    },
  })
  try {
    dispatch.start()
    dispatch.wake()
    await vi.waitFor(() => expect(log.length).toBe(2))
    await dispatch.idle()
    expect(log).toEqual(['innocent:0,1,2,3', 'innocent:4'])
    expect(await rt.store.db.selectFrom('recipe_event_fires').select('status').where('status', '!=', 'done').execute()).toEqual([])
  } finally {
    await dispatch.stop()
  }
})
