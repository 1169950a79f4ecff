import { sql } from 'kysely'
import { afterEach, expect, it } from 'vitest'
import { createRecipeEngine, TICK_CLAIM_LOST_MS, TICK_SWEEP_MS } from '../../src/recipes/engine.ts'
import { listRuns } from '../../src/recipes/runner.ts'
import { createRuntime } from '../../src/runtime.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { createSilentLogger } from '../../src/utils/logger.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { tempRecipesDir, tickRecipe } from './helpers.ts'

/**
 * DESIGN: each tick runs once. A tick must not be lost to a moment without the database: one that came due while it
 * was away (the claim failed), or one claimed just before the connection dropped (or the process died) and so never
 * run — the claim alone used to stand for the run, on every replica, until a restart, whose catch-up skipped it too.
 * The database going away is played by a trigger failing the statement as a terminated connection does.
 */
const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const fn of cleanups.reverse()) await fn()
  cleanups.length = 0
})

async function failInserts(rt: TestRuntime, table: 'recipe_ticks' | 'recipe_runs'): Promise<() => Promise<void>> {
  if (rt.store.dialect === 'postgres') {
    await sql.raw(`create function fail_${table}() returns trigger language plpgsql as $$ begin raise exception 'terminating connection due to administrator command' using errcode = '57P01'; end $$`).execute(rt.store.db)
    await sql.raw(`create trigger fail_${table} before insert on ${table} for each row execute function fail_${table}()`).execute(rt.store.db)
    return async () => void (await sql.raw(`drop trigger fail_${table} on ${table}; drop function fail_${table}()`).execute(rt.store.db))
  }
  await sql.raw(`create trigger fail_${table} before insert on ${table} begin select raise(abort, 'disk I/O error'); end`).execute(rt.store.db)
  return async () => void (await sql.raw(`drop trigger fail_${table}`).execute(rt.store.db))
}

describeEachDialect('scheduled ticks across a moment without the database', (dialect) => {
  async function setUp() {
    const folder = tempRecipesDir()
    cleanups.push(() => folder.cleanup())
    folder.write('nightly', tickRecipe({ schedule: '0 8 * * *', timezone: 'UTC' }))
    const clock = createManualClock('2026-03-02T07:59:00Z')
    const rt = await createTestRuntime({ dialect, clock, env: { RECIPES_DIR: folder.dir, RECIPES_TYPECHECK: 'false' } })
    cleanups.push(() => rt.close())
    const engine = createRecipeEngine(rt)
    cleanups.push(() => engine.stop())
    await engine.start()
    const runs = async () => (await listRuns(rt, { recipe: 'nightly' })).map((r) => [r.trigger, r.status, (r.summary as { at: string } | null)?.at])
    return { rt, clock, engine, runs }
  }

  it('a tick that came due while the database was away runs once it is back', async () => {
    const { rt, clock, engine, runs } = await setUp()
    const back = await failInserts(rt, 'recipe_ticks')
    await clock.advance(61_000) // 08:00:01: the claim fails
    await engine.idle()
    await back()
    expect(await runs()).toEqual([])
    // Left to the scheduler's own claim for TICK_CLAIM_LOST_MS, then the sweep runs it.
    await clock.advance(TICK_CLAIM_LOST_MS + TICK_SWEEP_MS)
    await engine.idle()
    expect(await runs()).toEqual([['catchup', 'succeeded', '2026-03-02T08:00:00.000Z']])
    // Once: later sweeps find it run.
    await clock.advance(10 * TICK_SWEEP_MS)
    await engine.idle()
    expect(await runs()).toHaveLength(1)
  })

  it('a tick claimed just before the database went away is run once — by one replica of two', async () => {
    const { rt, clock, engine, runs } = await setUp()
    const other = await createRuntime(rt.config, { store: rt.store, skipMigrate: true, clock, log: createSilentLogger() })
    const otherEngine = createRecipeEngine(other)
    cleanups.push(() => other.close(), () => otherEngine.stop())
    const back = await failInserts(rt, 'recipe_runs')
    await clock.advance(61_000) // claimed, and the run's record fails
    await engine.idle()
    await back()
    expect(await rt.store.db.selectFrom('recipe_ticks').select('recipe').execute()).toHaveLength(1)
    expect(await runs()).toEqual([])
    await otherEngine.start()
    for (let i = 0; i < 12; i++) {
      await clock.advance(TICK_SWEEP_MS)
      await engine.idle()
      await otherEngine.idle()
    }
    expect(await runs()).toEqual([['catchup', 'succeeded', '2026-03-02T08:00:00.000Z']])
  })

  it('a tick that ran is never run again by the sweep, nor one claimed moments ago', async () => {
    const { clock, engine, runs } = await setUp()
    await clock.advance(61_000)
    await engine.idle()
    expect(await runs()).toEqual([['cron', 'succeeded', '2026-03-02T08:00:00.000Z']])
    await clock.advance(30 * TICK_SWEEP_MS)
    await engine.idle()
    expect(await runs()).toHaveLength(1)
  })
})
