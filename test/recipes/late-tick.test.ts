import { afterEach, expect, it } from 'vitest'
import { createRecipeEngine } from '../../src/recipes/engine.ts'
import { listRuns } from '../../src/recipes/runner.ts'
import { createScheduler } from '../../src/recipes/scheduler.ts'
import { createManualClock, type Clock, type ManualClock } from '../../src/utils/clock.ts'
import { createTestRuntime } from '../helpers/runtime.ts'
import { tempRecipesDir, tickRecipe } from './helpers.ts'

/**
 * A machine that sleeps (a paused VM, a laptop lid) wakes with its wall clock days ahead while a pending timer
 * only now comes due. The late timer must run the newest tick due, as the start-up catch-up does: a daily report
 * paused Friday 07:00 and woken Monday 09:00 reports Sunday (Monday 08:00's tick), not Thursday (Friday's).
 */
interface SleepingClock extends Clock {
  timers: ManualClock
  /** The wall clock moves on; timers do not notice. */
  sleep(ms: number): void
}

function sleepingClock(start: string): SleepingClock {
  const timers = createManualClock(start)
  let slept = 0
  return {
    timers,
    now: () => timers.now() + slept,
    setTimeout: (fn, ms, options) => timers.setTimeout(fn, ms, options),
    sleep(ms) {
      slept += ms
    },
  }
}

const DAY = 86_400_000
const HOUR = 3_600_000
const iso = (ms: number) => new Date(ms).toISOString()
const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const fn of cleanups.reverse()) await fn()
  cleanups.length = 0
})

it('the scheduler: a timer that fires three days late ticks once, with the newest tick due', async () => {
  // Friday 9 January 2026, 07:00 in London (UTC in winter).
  const clock = sleepingClock('2026-01-09T07:00:00Z')
  const ticks: string[] = []
  const scheduler = createScheduler(clock, (name, tickAt) => ticks.push(`${name} ${iso(tickAt)} at ${iso(clock.now())}`))
  cleanups.push(() => scheduler.stop())
  scheduler.set([{ name: 'daily-report', pattern: '0 8 * * *', timezone: 'Europe/London' }])
  await clock.timers.advance(0)
  expect(scheduler.nextRun('daily-report')).toBe(Date.parse('2026-01-09T08:00:00Z'))

  clock.sleep(3 * DAY + HOUR)
  // The timer's next one-minute slice comes due (MAX_WAIT_MS): the wall clock says Monday 08:01.
  await clock.timers.advance(60_000)
  expect(ticks).toEqual(['daily-report 2026-01-12T08:00:00.000Z at 2026-01-12T08:01:00.000Z'])
  expect(scheduler.nextRun('daily-report')).toBe(Date.parse('2026-01-13T08:00:00Z'))
})

it('the service: Monday\'s run after the pause is for Monday\'s tick, and Tuesday\'s follows as usual', async () => {
  const folder = tempRecipesDir()
  cleanups.push(() => folder.cleanup())
  folder.write('daily-report', tickRecipe({ schedule: '0 8 * * *', timezone: 'Europe/London' }))
  // Thursday 8 January, 07:30: Thursday's 08:00 tick runs before the pause.
  const clock = sleepingClock('2026-01-08T07:30:00Z')
  const rt = await createTestRuntime({ clock, env: { RECIPES_DIR: folder.dir } })
  const engine = createRecipeEngine(rt)
  cleanups.push(() => rt.close(), () => engine.stop())
  await engine.start()
  const advanceTo = async (wall: string) => {
    while (clock.now() < Date.parse(wall)) {
      await clock.timers.advance(Math.min(HOUR, Date.parse(wall) - clock.now()))
      await engine.idle()
    }
  }
  await advanceTo('2026-01-09T07:00:00Z')
  clock.sleep(3 * DAY + HOUR)
  await clock.timers.advance(HOUR)
  await engine.idle()
  await advanceTo('2026-01-13T09:00:00Z')
  const runs = (await listRuns(rt, { recipe: 'daily-report' })).reverse()
  expect(runs.map((r) => [r.trigger, r.status, (r.summary as { at: string }).at])).toEqual([
    ['cron', 'succeeded', '2026-01-08T08:00:00.000Z'],
    ['cron', 'succeeded', '2026-01-12T08:00:00.000Z'],
    ['cron', 'succeeded', '2026-01-13T08:00:00.000Z'],
  ])
})
