import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createRecipeEngine, type RecipeEngine } from '../../src/recipes/engine.ts'
import { listRuns } from '../../src/recipes/runner.ts'
import { createManualClock, type Clock, type ManualClock } from '../../src/utils/clock.ts'
import { MAX_WAIT_MS } from '../../src/recipes/scheduler.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { tempRecipesDir, tickRecipe } from './helpers.ts'

/** A run's summary is the JSON value the test recipe returned. */
type Summary = { at: string; tz: string; runs: number } & Record<string, unknown>

type Gate = { release(): void; started: boolean }
declare global {
  // A recipe file and the test meet here to hold a run open.
  var __sbGate: Gate | undefined
}

/**
 * Moves the manual clock an hour at a time and lets each tick's run finish (on Postgres a run's queries
 * are real I/O; jumping days at once would make every tick meet the previous run still in progress).
 */
async function advanceHourly(clock: ManualClock, engine: RecipeEngine, to: string): Promise<void> {
  const target = Date.parse(to)
  while (clock.now() < target) {
    await clock.advanceTo(Math.min(target, clock.now() + 3_600_000))
    await engine.idle()
  }
}

const cronRunsOf = async (rt: TestRuntime, recipe: string) =>
  (await listRuns(rt, { recipe, limit: 1000 })).filter((r) => r.trigger === 'cron').reverse()

describeEachDialect('recipe scheduler', (dialect) => {
  let folder: ReturnType<typeof tempRecipesDir>
  let clock: ManualClock
  let rt: TestRuntime
  let engine: RecipeEngine
  const cleanups: Array<() => Promise<void> | void> = []

  const boot = async (start: string, env: Record<string, string> = {}) => {
    clock = createManualClock(start)
    rt = await createTestRuntime({ dialect, clock, env: { RECIPES_DIR: folder.dir, ...env } })
    engine = createRecipeEngine(rt)
    cleanups.push(() => engine.stop(), () => rt.close())
  }

  beforeEach(() => {
    folder = tempRecipesDir()
  })
  afterEach(async () => {
    for (const fn of cleanups.reverse()) await fn()
    cleanups.length = 0
    folder.cleanup()
    globalThis.__sbGate = undefined
  })

  it('fires at the right local times in two time zones', async () => {
    folder.write('kolkata', tickRecipe({ schedule: '0 9 * * *' })) // RECIPES_TIMEZONE
    folder.write('newyork', tickRecipe({ schedule: '30 9 * * 1-5', timezone: 'America/New_York' }))
    await boot('2026-01-01T00:00:00Z', { RECIPES_TIMEZONE: 'Asia/Kolkata' })
    await engine.start()
    // Thursday 1 Jan to Monday 5 Jan: Kolkata every day at 03:30Z; New York weekdays at 14:30Z (EST).
    await advanceHourly(clock, engine, '2026-01-05T23:59:00Z')
    const kol = await cronRunsOf(rt, 'kolkata')
    expect(kol.map((r) => (r.summary as Summary).at)).toEqual([
      '2026-01-01T03:30:00.000Z', '2026-01-02T03:30:00.000Z', '2026-01-03T03:30:00.000Z', '2026-01-04T03:30:00.000Z', '2026-01-05T03:30:00.000Z',
    ])
    expect(kol.every((r) => r.status === 'succeeded' && (r.summary as Summary).tz === 'Asia/Kolkata')).toBe(true)
    // The run starts at its tick on the injected clock, never before it (later only by the claim's I/O).
    for (const r of kol) {
      const at = Date.parse((r.summary as Summary).at)
      expect(r.startedAt).toBeGreaterThanOrEqual(at)
      expect(r.startedAt - at).toBeLessThan(3_600_000)
      if (dialect === 'sqlite') expect(r.startedAt).toBe(at)
    }
    const ny = await cronRunsOf(rt, 'newyork')
    expect(ny.map((r) => (r.summary as Summary).at)).toEqual(['2026-01-01T14:30:00.000Z', '2026-01-02T14:30:00.000Z', '2026-01-05T14:30:00.000Z'])
    const listed = await engine.list()
    expect(listed.find((r) => r.name === 'newyork')?.nextRun).toBe(Date.parse('2026-01-06T14:30:00Z'))
    expect(listed.find((r) => r.name === 'kolkata')?.lastRun?.status).toBe('succeeded')
  })

  it('keeps local time across the March DST change in America/New_York', async () => {
    folder.write('morning', tickRecipe({ schedule: '0 8 * * *', timezone: 'America/New_York' }))
    // 02:30 does not exist on 8 March 2026 in New York: it must still run once that day, never twice.
    folder.write('gap', tickRecipe({ schedule: '30 2 * * *', timezone: 'America/New_York' }))
    await boot('2026-03-06T00:00:00Z')
    await engine.start()
    await advanceHourly(clock, engine, '2026-03-10T00:00:00Z')
    expect((await cronRunsOf(rt, 'morning')).map((r) => (r.summary as Summary).at)).toEqual([
      '2026-03-06T13:00:00.000Z', // EST, UTC-5
      '2026-03-07T13:00:00.000Z',
      '2026-03-08T12:00:00.000Z', // EDT from 8 March, UTC-4
      '2026-03-09T12:00:00.000Z',
    ])
    const gap = (await cronRunsOf(rt, 'gap')).map((r) => (r.summary as Summary).at as string)
    expect(gap.map((t) => t.slice(0, 10))).toEqual(['2026-03-06', '2026-03-07', '2026-03-08', '2026-03-09'])
    expect(gap[0]).toBe('2026-03-06T07:30:00.000Z')
    expect(gap[3]).toBe('2026-03-09T06:30:00.000Z')
  })

  it('never overlaps: a tick during a run is recorded as skipped, and the next one runs', async () => {
    folder.write('slow', `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'waits for the test',
  schedule: '*/5 * * * *',
  async run() {
    const gate = globalThis.__sbGate
    if (!gate) return 'no gate'
    gate.started = true
    await new Promise((resolve) => { gate.release = resolve })
    return 'released'
  },
})
`)
    // The run is held for five minutes of the test's clock: as long as the default run time limit (300 s).
    await boot('2026-01-01T00:00:00Z', { RECIPES_TIMEZONE: 'UTC', RECIPE_TIMEOUT_SECONDS: '3000' })
    const gate: Gate = { release: () => {}, started: false }
    globalThis.__sbGate = gate
    await engine.start()
    await clock.advanceTo(Date.parse('2026-01-01T00:05:00Z'))
    await vi.waitFor(() => expect(gate.started).toBe(true))
    await clock.advanceTo(Date.parse('2026-01-01T00:10:00Z'))
    await vi.waitFor(async () => expect((await listRuns(rt, { recipe: 'slow' })).some((r) => r.status === 'skipped')).toBe(true))
    gate.release()
    globalThis.__sbGate = undefined
    await engine.idle()
    await clock.advanceTo(Date.parse('2026-01-01T00:15:00Z'))
    await engine.idle()
    const runs = (await listRuns(rt, { recipe: 'slow' })).reverse()
    expect(runs.map((r) => [r.status, typeof r.summary === 'string' && r.summary.startsWith('skipped') ? 'skipped…' : r.summary])).toEqual([
      ['succeeded', 'released'],
      ['skipped', 'skipped…'],
      ['succeeded', 'no gate'],
    ])
    expect(runs[1]!.startedAt).toBe(Date.parse('2026-01-01T00:10:00Z'))
    // A manual run waits for the one in progress instead of running beside it.
    const g2: Gate = { release: () => {}, started: false }
    globalThis.__sbGate = g2
    const first = engine.run('slow')
    await vi.waitFor(() => expect(g2.started).toBe(true))
    let secondDone = false
    const second = engine.run('slow').then((r) => ((secondDone = true), r))
    await new Promise((r) => setImmediate(r))
    expect(secondDone).toBe(false)
    globalThis.__sbGate = undefined
    g2.release()
    expect((await first).summary).toBe('released')
    expect((await second).summary).toBe('no gate')
  })

  it('runs a tick missed while down once at start-up, and only once', async () => {
    folder.write('daily', tickRecipe({ schedule: '0 8 * * *', timezone: 'UTC' }))
    await boot('2026-01-01T07:00:00Z')
    await engine.start()
    await clock.advanceTo(Date.parse('2026-01-01T09:00:00Z'))
    await engine.stop()
    // Down for three days: ticks on 2, 3 and 4 January are missed.
    await clock.advanceTo(Date.parse('2026-01-04T10:00:00Z'))
    const restarted = createRecipeEngine(rt)
    cleanups.push(() => restarted.stop())
    await restarted.start()
    await restarted.idle()
    let runs = (await listRuns(rt, { recipe: 'daily' })).reverse()
    expect(runs.map((r) => [r.trigger, (r.summary as Summary).at])).toEqual([
      ['cron', '2026-01-01T08:00:00.000Z'],
      ['catchup', '2026-01-04T08:00:00.000Z'],
    ])
    // Another restart the same day finds the catch-up claimed and runs nothing.
    await restarted.stop()
    const again = createRecipeEngine(rt)
    cleanups.push(() => again.stop())
    await again.start()
    await again.idle()
    await clock.advanceTo(Date.parse('2026-01-05T08:00:00Z'))
    await again.idle()
    runs = (await listRuns(rt, { recipe: 'daily' })).reverse()
    expect(runs.map((r) => [r.trigger, (r.summary as Summary).at])).toEqual([
      ['cron', '2026-01-01T08:00:00.000Z'],
      ['catchup', '2026-01-04T08:00:00.000Z'],
      ['cron', '2026-01-05T08:00:00.000Z'],
    ])
  })

  it('catches up only ticks missed while down: not one of a schedule edited, a recipe switched off, or one broken at the tick, while up', async () => {
    folder.write('edited', tickRecipe({ schedule: '0 20 * * *', timezone: 'UTC' }))
    folder.write('paused', tickRecipe({ schedule: '0 8 * * *', timezone: 'UTC' }))
    folder.write('flaky', tickRecipe({ schedule: '0 8 * * *', timezone: 'UTC' }))
    await boot('2026-01-01T07:00:00Z')
    await engine.start()
    await advanceHourly(clock, engine, '2026-01-01T21:00:00Z')
    // While up: edited from 20:00 to 08:00 at 10:00 (after that day's 08:00); paused switched off (`_paused.ts`) for
    // two days and back at 10:00; flaky broken from 07:55 to 08:05, across its tick.
    await advanceHourly(clock, engine, '2026-01-02T07:00:00Z')
    const { renameSync } = await import('node:fs')
    renameSync(`${folder.dir}/paused.ts`, `${folder.dir}/_paused.ts`)
    await engine.reload()
    await clock.advanceTo(Date.parse('2026-01-02T07:55:00Z'))
    folder.write('flaky', 'export default {')
    await engine.reload()
    await clock.advanceTo(Date.parse('2026-01-02T08:05:00Z'))
    await engine.idle()
    folder.write('flaky', tickRecipe({ schedule: '0 8 * * *', timezone: 'UTC' }))
    await engine.reload()
    await advanceHourly(clock, engine, '2026-01-04T10:00:00Z')
    folder.write('edited', tickRecipe({ schedule: '0 8 * * *', timezone: 'UTC' }))
    renameSync(`${folder.dir}/_paused.ts`, `${folder.dir}/paused.ts`)
    await engine.reload()
    await advanceHourly(clock, engine, '2026-01-04T11:00:00Z')
    const before = async (name: string) => (await listRuns(rt, { recipe: name, limit: 100 })).map((r) => r.id)
    const seen = { edited: await before('edited'), paused: await before('paused'), flaky: await before('flaky') }
    // A restart at 11:00 finds each schedule armed after its 08:00 tick: nothing to catch up.
    await engine.stop()
    const restarted = createRecipeEngine(rt)
    cleanups.push(() => restarted.stop())
    await restarted.start()
    await restarted.idle()
    for (const name of ['edited', 'paused', 'flaky'] as const) {
      const runs = await listRuns(rt, { recipe: name, limit: 100 })
      expect(runs.filter((r) => !seen[name].includes(r.id)).map((r) => r.trigger), name).toEqual([])
    }
    // They run at their next tick, as scheduled.
    await advanceHourly(clock, restarted, '2026-01-05T09:00:00Z')
    for (const name of ['edited', 'paused', 'flaky'] as const) {
      const runs = (await listRuns(rt, { recipe: name, limit: 100 })).filter((r) => !seen[name].includes(r.id))
      expect(runs.map((r) => [r.trigger, (r.summary as Summary).at]), name).toEqual([['cron', '2026-01-05T08:00:00.000Z']])
    }
  })

  it('after an upgrade from a version that kept only a first sighting, an unchanged recipe still catches up a tick missed while down', async () => {
    folder.write('daily', tickRecipe({ schedule: '0 8 * * *', timezone: 'UTC' }))
    await boot('2026-01-04T10:00:00Z')
    // What 0.8.0 left: the name's first sighting, days ago; no `armed:` record.
    await rt.store.db.insertInto('kv_state').values({ namespace: 'switchboard:scheduler', key: 'first_seen:daily', value: String(Date.parse('2026-01-01T07:00:00Z')), updated_at: 0 }).execute()
    await engine.start()
    await engine.idle()
    expect((await listRuns(rt, { recipe: 'daily' })).map((r) => [r.trigger, (r.summary as Summary).at])).toEqual([['catchup', '2026-01-04T08:00:00.000Z']])
  })

  it('does not "catch up" a tick from before a recipe existed', async () => {
    await boot('2026-01-01T07:00:00Z')
    await engine.start()
    await clock.advanceTo(Date.parse('2026-01-02T10:00:00Z'))
    folder.write('fresh', tickRecipe({ schedule: '0 8 * * *', timezone: 'UTC' }))
    await engine.stop()
    const restarted = createRecipeEngine(rt)
    cleanups.push(() => restarted.stop())
    await restarted.start()
    await restarted.idle()
    expect(await listRuns(rt, { recipe: 'fresh' })).toEqual([])
    await clock.advanceTo(Date.parse('2026-01-03T08:00:00Z'))
    await restarted.idle()
    expect((await listRuns(rt, { recipe: 'fresh' })).map((r) => r.trigger)).toEqual(['cron'])
  })

  it('does not "catch up" a tick from the days a recipe was removed while the service was down', async () => {
    folder.write('daily', tickRecipe({ schedule: '0 8 * * *', timezone: 'UTC' }))
    await boot('2026-01-01T07:00:00Z')
    await engine.start()
    await clock.advanceTo(Date.parse('2026-01-01T09:00:00Z'))
    await engine.idle()
    await engine.stop()
    // Removed while down; the service starts without it on 2 January.
    const { rmSync } = await import('node:fs')
    rmSync(`${folder.dir}/daily.ts`)
    await clock.advanceTo(Date.parse('2026-01-02T09:00:00Z'))
    const without = createRecipeEngine(rt)
    cleanups.push(() => without.stop())
    await without.start()
    await without.idle()
    // Added back on 3 January at 10:00, after that day's 08:00 tick, while up; then a restart at 11:00.
    await clock.advanceTo(Date.parse('2026-01-03T10:00:00Z'))
    folder.write('daily', tickRecipe({ schedule: '0 8 * * *', timezone: 'UTC' }))
    await without.reload()
    await clock.advanceTo(Date.parse('2026-01-03T11:00:00Z'))
    await without.stop()
    const restarted = createRecipeEngine(rt)
    cleanups.push(() => restarted.stop())
    await restarted.start()
    await restarted.idle()
    expect((await listRuns(rt, { recipe: 'daily' })).map((r) => r.trigger)).toEqual(['cron'])
    await clock.advanceTo(Date.parse('2026-01-04T08:00:00Z'))
    await restarted.idle()
    expect((await listRuns(rt, { recipe: 'daily' })).reverse().map((r) => [r.trigger, (r.summary as Summary).at])).toEqual([
      ['cron', '2026-01-01T08:00:00.000Z'],
      ['cron', '2026-01-04T08:00:00.000Z'],
    ])
  })

  it('records a throwing recipe as failed and still runs the next tick', async () => {
    folder.write('flaky', `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'fails on its first run',
  schedule: '0 * * * *',
  timezone: 'UTC',
  async run(ctx) {
    const n = ((await ctx.state.get<number>('n')) ?? 0) + 1
    await ctx.state.set('n', n)
    if (n === 1) throw new Error('upstream said no')
    return { n }
  },
})
`)
    // The time limit out of the way (its most, 50 minutes): an hour's advance fires the run's 300 s limit before a slow
    // database (Postgres under CI's load) has let the throwing run end; the clock moves at most 30 minutes past a tick
    // before the engine is idle again.
    await boot('2026-01-01T00:30:00Z', { RECIPE_TIMEOUT_SECONDS: '3000' })
    await engine.start()
    await advanceHourly(clock, engine, '2026-01-01T02:00:00Z')
    const runs = (await listRuns(rt, { recipe: 'flaky' })).reverse()
    expect(runs.map((r) => [r.status, r.error, r.summary])).toEqual([
      // The recipe's own line, as its editor shows it.
      ['failed', expect.stringMatching(/^upstream said no \(at .*\/flaky\.ts:9:\d+\)$/), null],
      ['succeeded', null, { n: 2 }],
    ])
    expect(runs.every((r) => r.endedAt !== null)).toBe(true)
  })
})

describe('a machine suspended before a tick (its timers stop; the wall clock does not)', () => {
  it('runs the tick within a minute of its time, not up to an hour late', async () => {
    const folder = tempRecipesDir()
    folder.write('daily', tickRecipe({ schedule: '0 8 * * *', timezone: 'UTC' }))
    // Timers on a manual clock; the wall clock the same plus the time spent asleep.
    const timers = createManualClock('2026-01-08T07:00:00Z')
    let slept = 0
    const clock: Clock = { now: () => timers.now() + slept, setTimeout: (fn, ms, o) => timers.setTimeout(fn, ms, o) }
    const rt = await createTestRuntime({ clock, env: { RECIPES_DIR: folder.dir } })
    const engine = createRecipeEngine(rt)
    try {
      await engine.start()
      await timers.advance(0)
      slept += 50 * 60_000 // asleep 07:00 → 07:50
      for (let i = 0; i < 15; i++) {
        await timers.advance(60_000)
        await engine.idle()
      }
      const runs = await listRuns(rt, { recipe: 'daily' })
      expect(runs).toHaveLength(1)
      expect(Date.parse((runs[0]!.summary as { now: string }).now) - Date.parse('2026-01-08T08:00:00Z')).toBeLessThanOrEqual(MAX_WAIT_MS)
    } finally {
      await engine.stop()
      await rt.close()
      folder.cleanup()
    }
  })
})
