import { Cron } from 'croner'
import { describe, expect, it } from 'vitest'
import { nextTick, previousTick } from '../../src/recipes/scheduler.ts'
import { createSeededRandom } from '../../src/utils/random.ts'

// previousTick/nextTick keep each schedule's last window of ticks and answer from it while an instant falls inside.
// Whatever order they are asked in, they must answer exactly as croner does afresh — across DST changes too.

/** Each instant where the memo and a fresh croner disagree (none expected). */
function mismatches(pattern: string, tz: string, instants: number[]): string[] {
  const cron = new Cron(pattern, { timezone: tz })
  const out: string[] = []
  for (const at of instants) {
    const want = [cron.previousRuns(1, new Date(at + 1))[0]?.getTime(), cron.nextRun(new Date(at))?.getTime()]
    const got = [previousTick(pattern, tz, at), nextTick(pattern, tz, at)]
    if (got[0] !== want[0] || got[1] !== want[1]) out.push(`${pattern} ${tz} at ${new Date(at).toISOString()}: ${got} instead of ${want}`)
  }
  return out
}

const SCHEDULES: Array<[string, string]> = [
  ['0 9 * * *', 'Asia/Kolkata'],
  ['30 9 * * 1-5', 'America/New_York'],
  // 02:30 does not exist on the spring-forward day and happens twice on the fall-back day.
  ['30 2 * * *', 'America/New_York'],
  ['0 1 * * *', 'Europe/London'],
  ['*/30 * * * *', 'UTC'],
  ['15 */6 * * *', 'Australia/Lord_Howe'],
  ['0 0 29 2 *', 'UTC'],
]

describe('previousTick and nextTick', () => {
  it('answer as croner does, stepping through days with both DST changes of 2026', () => {
    for (const [pattern, tz] of SCHEDULES) {
      for (const [from, to] of [['2026-03-07T00:00:00Z', '2026-03-09T12:00:00Z'], ['2026-10-31T00:00:00Z', '2026-11-02T12:00:00Z'], ['2026-04-04T00:00:00Z', '2026-04-05T12:00:00Z']] as const) {
        const instants: number[] = []
        for (let at = Date.parse(from); at < Date.parse(to); at += 17 * 60_000 + 13_000) instants.push(at)
        expect(mismatches(pattern, tz, instants)).toEqual([])
      }
    }
  })

  it('answer as croner does when asked in any order, on the ticks themselves and a millisecond either side', () => {
    const random = createSeededRandom(7)
    const start = Date.parse('2026-01-01T00:00:00Z')
    for (const [pattern, tz] of SCHEDULES) {
      const ticks = new Cron(pattern, { timezone: tz }).nextRuns(40, new Date(start)).map((d) => d.getTime())
      const instants = [...ticks.flatMap((t) => [t - 1, t, t + 1]), ...Array.from({ length: 200 }, () => start + Math.floor(random.next() * 400 * 86_400_000))]
      const shuffled = Array.from({ length: 300 }, () => instants[Math.floor(random.next() * instants.length)]!)
      expect(mismatches(pattern, tz, shuffled)).toEqual([])
    }
  })
})
