import { afterEach, expect, it, vi } from 'vitest'
import type { Kysely } from 'kysely'
import { enqueueEventFires } from '../../src/recipes/claims.ts'
import { createEventDispatch, FIRE_CLAIM_MS } from '../../src/recipes/event-dispatch.ts'
import type { LoadedRecipe } from '../../src/recipes/loader.ts'
import type { RecipeRun } from '../../src/recipes/runner.ts'
import { createRuntime, type Runtime } from '../../src/runtime.ts'
import { loadConfig } from '../../src/config/load.ts'
import type { Database } from '../../src/db/schema.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { createSilentLogger } from '../../src/utils/logger.ts'
import { createSeededRandom } from '../../src/utils/random.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { pendingRow } from '../../src/webhooks/inbox.ts'
import { makeEvent } from '../webhooks/helpers.ts'

/**
 * A recipe's batch claimed by replica A, which is then frozen (a VM paused) before its run starts: its claim
 * (FIRE_CLAIM_MS) lapses, replica B claims the same events and runs them. A resumes: it must not run them again —
 * each event runs once per recipe. A's freeze is its read of the batch's events held until B is done.
 */
let a: TestRuntime | undefined
afterEach(async () => {
  await a?.close()
  a = undefined
})

const RECIPE: LoadedRecipe = { name: 'follow', file: 'follow.ts', definition: { description: 'test', on: ['call.no_answer'], run: () => null }, error: undefined, timezone: 'UTC' }

/** `db` whose first read of `webhook_events` waits for `release` (the process frozen right after its claim). */
function frozenOnLoad(db: Kysely<Database>): { db: Kysely<Database>; reached: Promise<void>; release(): void } {
  let release = () => {}
  let reach = () => {}
  const reached = new Promise<void>((resolve) => (reach = resolve))
  const released = new Promise<void>((resolve) => (release = resolve))
  let held = false
  const wrap = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(obj, prop, receiver) {
        const value = Reflect.get(obj, prop, receiver) as unknown
        if (typeof value !== 'function') return value
        if (prop === 'execute') {
          return async (...args: unknown[]) => {
            reach()
            await released
            return (value as (...a: unknown[]) => unknown).apply(obj, args)
          }
        }
        return (...args: unknown[]) => {
          const out = (value as (...a: unknown[]) => unknown).apply(obj, args)
          return out && typeof out === 'object' ? wrap(out) : out
        }
      },
    })
  const proxied = new Proxy(db, {
    get(obj, prop, receiver) {
      const value = Reflect.get(obj, prop, receiver) as unknown
      if (prop === 'selectFrom') {
        return (table: string) => {
          const q = obj.selectFrom(table as 'webhook_events')
          if (table !== 'webhook_events' || held) return q
          held = true
          return wrap(q)
        }
      }
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(obj) : value
    },
  })
  return { db: proxied, reached, release: () => release() }
}

it('a replica frozen between claiming a batch and running it does not run events another replica ran meanwhile', async () => {
  const clockA = createManualClock('2026-03-01T10:00:00Z')
  const clockB = createManualClock('2026-03-01T10:00:00Z')
  a = await createTestRuntime({ clock: clockA })
  const configB = loadConfig({ env: { DATA_DIR: a.dataDir, WEBHOOK_SECRET: 'whsec_test_secret', PORT: '0', LOG_LEVEL: 'silent', RECIPES_TYPECHECK: 'false' } })
  const b: Runtime = await createRuntime(configB, { store: a.store, skipMigrate: true, clock: clockB, random: createSeededRandom(999), log: createSilentLogger() })
  const events = [0, 1, 2].map(() => makeEvent({ event_type: 'call.no_answer' }))
  const ids = events.map((e) => e.event_id)
  await a.store.db.insertInto('webhook_events').values(events.map((e) => pendingRow({
    event_id: e.event_id, target: 'formant', event_type: e.event_type, conversation_id: null, trace_id: null, agent_id: null, body: JSON.stringify(e), headers: '{}', source: 'webhook',
  }, clockA.now()))).execute()
  await enqueueEventFires(a, ids.map((eventId) => ({ recipe: RECIPE.name, eventId })))

  const ran: Array<{ replica: string; events: string[] }> = []
  const deps = (replica: string) => ({
    recipes: () => [RECIPE],
    subscriptions: () => RECIPE.definition!.on,
    inProgress: async () => false,
    run: async (_recipe: LoadedRecipe, events: Array<{ eventId: string }>): Promise<RecipeRun> => {
      ran.push({ replica, events: events.map((e) => e.eventId).sort() })
      return { id: `run_${replica}_${ran.length}`, recipe: RECIPE.name, trigger: 'event', eventId: null, dryRun: false, status: 'succeeded', startedAt: 0, endedAt: 0, summary: null, plan: [], planOmitted: {}, error: null }
    },
  })
  const frozen = frozenOnLoad(a.store.db)
  const dispatchA = createEventDispatch({ ...a, store: { ...a.store, db: frozen.db } } as Runtime, deps('A'))
  const dispatchB = createEventDispatch(b, deps('B'))
  try {
    dispatchA.start()
    dispatchA.wake(RECIPE.name)
    // A has claimed the batch and is frozen reading its events.
    await frozen.reached
    // B, past A's claim: it claims the same events and runs them.
    await clockB.advance(FIRE_CLAIM_MS + 1_000)
    dispatchB.start()
    dispatchB.wake(RECIPE.name)
    await vi.waitFor(() => expect(ran.map((r) => r.replica)).toEqual(['B']))
    await dispatchB.idle()
    // A wakes up.
    frozen.release()
    await dispatchA.idle()
    expect(ran).toEqual([{ replica: 'B', events: [...ids].sort() }])
    const fires = await a.store.db.selectFrom('recipe_event_fires').select(['status', 'run_id']).execute()
    expect(fires.map((f) => [f.status, f.run_id])).toEqual(ids.map(() => ['done', 'run_B_1']))
  } finally {
    await dispatchA.stop()
    await dispatchB.stop()
  }
})
