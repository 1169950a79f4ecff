import { afterEach, beforeEach, expect, it, vi } from 'vitest'
import { registerInstance, releaseInstance } from '../../src/instances.ts'
import { createRecipeEngine, type RecipeEngine } from '../../src/recipes/engine.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { processed, storeEvents, tempRecipesDir } from './helpers.ts'

/**
 * An event batch claimed while its recipe is busy in this process (a run asked for a moment before, not started yet)
 * waits for its turn, holding its events' claims. Stopping the service (SIGTERM) left it waiting: the stop waited for
 * the run ahead, the thread was ended once its grace was up, and giving back the ended thread's claims charged the
 * batch an attempt for a run it never began (after PROCESSING_MAX_ATTEMPTS, dead). On stop it is handed back at once,
 * uncharged, and runs after the restart.
 */
interface Shared {
  log: string[]
  gates: Map<string, () => void>
  /** Set after each test: runs no longer wait (one started while an engine stops must let it stop). */
  open?: boolean
}
const shared = globalThis as unknown as { __sbStopWaiting?: Shared }

// Typed: the first test's engine type-checks it.
const RUN = `async run(ctx) {
    const s = (globalThis as unknown as { __sbStopWaiting: { log: string[]; gates: Map<string, () => void>; open?: boolean } }).__sbStopWaiting
    const label = ctx.name + ':' + ctx.trigger.type
    s.log.push('start ' + label)
    if (!s.open) await new Promise<void>((resolve) => s.gates.set(label, resolve))
    s.log.push('end ' + label)
    return null
  },`

describeEachDialect('stopping while an event batch waits for its recipe\'s turn', (dialect) => {
  let rt: TestRuntime
  let s: Shared
  let logs: ReturnType<typeof captureLogs>
  let dir: string
  const cleanups: Array<() => Promise<void> | void> = []

  beforeEach(async () => {
    s = { log: [], gates: new Map() }
    shared.__sbStopWaiting = s
    const folder = tempRecipesDir()
    dir = folder.dir
    cleanups.push(() => folder.cleanup())
    folder.write('crm-sync', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'takes events, and is run by hand too', on: ['call.no_answer'], ${RUN} })
`)
    logs = captureLogs()
    rt = await createTestRuntime({ dialect, clock: createManualClock('2026-03-01T10:00:00Z'), log: logs.log, env: { RECIPES_DIR: folder.dir, RECIPES_TIMEZONE: 'UTC', RECIPE_BATCH_WAIT_MS: '0' } })
  })

  afterEach(async () => {
    s.open = true
    for (const open of s.gates.values()) open()
    for (const fn of cleanups.reverse()) await fn()
    cleanups.length = 0
    await rt.close()
    delete shared.__sbStopWaiting
  })

  const engineOn = async (options: { typeCheck?: boolean } = {}): Promise<RecipeEngine> => {
    const engine = createRecipeEngine(rt, { dir, ...options })
    cleanups.push(() => engine.stop())
    await engine.start()
    return engine
  }
  const fires = () => rt.store.db.selectFrom('recipe_event_fires').select(['event_id', 'status', 'attempts', 'claimed_by', 'last_error']).orderBy('event_id').execute()
  const finish = async (label: string) => {
    await vi.waitFor(() => expect(s.gates.has(label)).toBe(true))
    s.gates.get(label)!()
    s.gates.delete(label)
  }

  it('hands the batch back uncharged at once, and it runs after the restart', async () => {
    // Known to the registry as `serve`'s thread is, so that ending it closes its runs (src/instances.ts).
    await registerInstance(rt)
    // Type-checked, as the service's recipes are by default: until the verdict is in (a second or so), a run asked for
    // waits for it in the recipe's queue here, with no run recorded yet.
    const engine = await engineOn({ typeCheck: true })
    const manual = engine.run('crm-sync')
    // crm-sync's events arrive meanwhile: nothing is recorded running, so the batch is claimed, and it waits for its
    // turn behind the manual run — which then starts, and goes on.
    const events = [processed('evt_1', 'call.no_answer'), processed('evt_2', 'call.no_answer')]
    await storeEvents(rt, events)
    await engine.enqueueEvents(events)
    await vi.waitFor(async () => expect((await fires()).map((f) => f.claimed_by)).toEqual([`${rt.instanceId}:recipes`, `${rt.instanceId}:recipes`]), { timeout: 10_000 })
    await vi.waitFor(() => expect(s.log).toEqual(['start crm-sync:manual']), { timeout: 30_000 })
    expect((await fires()).map((f) => f.claimed_by)).toEqual([`${rt.instanceId}:recipes`, `${rt.instanceId}:recipes`])

    // SIGTERM: the stop waits for the manual run; the batch that never started gives its events back meanwhile.
    const stopping = engine.stop()
    await vi.waitFor(async () => expect((await fires()).map((f) => f.claimed_by)).toEqual([null, null]), { timeout: 10_000 })
    // The stop's grace is up and the thread is ended: what it still holds is given back, its runs closed, as after a
    // crash (the next start's reap does the same). The batch is charged nothing.
    await releaseInstance(rt, rt.instanceId)
    expect(await fires()).toEqual([
      { event_id: 'evt_1', status: 'pending', attempts: 0, claimed_by: null, last_error: null },
      { event_id: 'evt_2', status: 'pending', attempts: 0, claimed_by: null, last_error: null },
    ])
    expect(logs.find(/^the service is stopping while a batch of recipe "crm-sync" waited for its turn; the batch was not run; its events go back to its queue, no attempt spent$/)).toEqual([expect.objectContaining({ recipe: 'crm-sync', events: 2 })])
    await finish('crm-sync:manual')
    await manual.catch(() => {})
    await stopping
    // It did not run during the stop either.
    expect(s.log).toEqual(['start crm-sync:manual', 'end crm-sync:manual'])

    // The restart runs the batch, once.
    const again = await engineOn()
    await vi.waitFor(() => expect(s.log).toContain('start crm-sync:event'), { timeout: 10_000 })
    await finish('crm-sync:event')
    await again.idle()
    expect(await fires()).toEqual([
      { event_id: 'evt_1', status: 'done', attempts: 0, claimed_by: null, last_error: null },
      { event_id: 'evt_2', status: 'done', attempts: 0, claimed_by: null, last_error: null },
    ])
  }, 60_000)
})
