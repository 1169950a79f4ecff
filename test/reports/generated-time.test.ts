import { afterEach, expect, it } from 'vitest'
import { buildDailyReport, renderDailyReport } from '../../src/reports/index.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { DAY, seedKnownDay, TZ } from './seed.ts'

let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})

// The report's day is counted in its zone, but its footer said when it was made in UTC: the 08:00 IST run read
// "Generated 2026-11-21T02:30:00.000Z", a different hour and (before 05:30) a different day than the reader's.
// The text part said nothing of when it was made: a reader of the plain-text mail could not tell a resent report from the
// morning's. Both parts now end with the same line.
it('the footer of both parts gives the time the report was made in the report\'s zone, with its offset and the zone\'s name', async () => {
  rt = await createTestRuntime({ clock: createManualClock(Date.parse('2026-11-21T02:30:00Z')), env: { VOICE_API_BASE_URL: 'http://127.0.0.1:9' } })
  const kolkata = renderDailyReport(await buildDailyReport(rt, { date: DAY, timezone: TZ }))
  expect(kolkata.html).toContain('Generated 2026-11-21T08:00:00+05:30 (Asia/Kolkata).')
  expect(kolkata.html).not.toContain('2026-11-21T02:30:00.000Z')
  expect(kolkata.text.trimEnd().split('\n').at(-1)).toBe('Generated 2026-11-21T08:00:00+05:30 (Asia/Kolkata).')
  const newYork = renderDailyReport(await buildDailyReport(rt, { date: DAY, timezone: 'America/New_York' }))
  expect(newYork.html).toContain('Generated 2026-11-20T21:30:00-05:00 (America/New_York).')
  expect(newYork.text).toContain('\nGenerated 2026-11-20T21:30:00-05:00 (America/New_York).\n')
  // A day with calls ends the same way, after the attachment's note.
  await seedKnownDay(rt)
  const busy = renderDailyReport(await buildDailyReport(rt, { date: DAY, timezone: TZ }))
  expect(busy.text).toContain('Every conversation of the day is in the attached CSV.\nGenerated 2026-11-21T08:00:00+05:30 (Asia/Kolkata).\n')
})
