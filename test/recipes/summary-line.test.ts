import { expect, it } from 'vitest'
import { summaryLine } from '../../src/recipes/summary.ts'

it('reads an object summary as a line of its figures', () => {
  expect(summaryLine({ planned: 2, queued: 0, placed: 0, calls: [{ status: 'planned' }, { status: 'planned' }] })).toBe('planned 2 · calls 2')
  expect(summaryLine({ date: '2026-11-26', mailed: false, reason: 'REPORT_TO is not set', totals: { calls: 4 } })).toBe('date 2026-11-26 · mailed no · reason REPORT_TO is not set')
  expect(summaryLine({ mailed: true, to: ['ops@example.com'] })).toBe('mailed yes · to ops@example.com')
  expect(summaryLine({ outcomes: ['scheduled', 'queued', 'scheduled', 'blocked'] })).toBe('outcomes 4')
  expect(summaryLine({ planned: 0, calls: [] })).toBe('nothing to report (every count 0)')
  // Only objects: they are the report (a call a recipe queued, returned as it came back), not "every count 0".
  expect(summaryLine({ r: { ok: true, record: { status: 'queued' } }, skipped: 0 })).toBe('r: see the whole summary')
  expect(summaryLine({})).toBe('nothing to report')
  // Anything but a plain object as it is: a string as written, the rest as JSON.
  expect(summaryLine('all good')).toBe('all good')
  expect(summaryLine([1, 2])).toBe('[1,2]')
  expect(summaryLine(7)).toBe('7')
})
