import { expect, it } from 'vitest'
import { toCallPlan } from '../../src/campaigns/call-input.ts'
import { dayRange } from '../../src/reports/day-range.ts'
import { validateRecipe } from '../../src/recipes/validate.ts'

// Intl takes `EST` as a zone of its own (UTC−5 all year, no daylight saving). RECIPES_TIMEZONE refuses it and a CSV's
// timezone column reads it as New York; the other places a zone is written take the same line.

it("a recipe's own `timezone: 'EST'` is refused, naming the zone meant (it ran an hour off all summer)", () => {
  expect(() => validateRecipe({ description: 'd', schedule: '0 8 * * *', timezone: 'EST', run: () => null }, 'UTC')).toThrow(
    '`timezone` "EST" is an abbreviation Intl reads as America/Panama\'s time, not America/New_York\'s: name the zone, e.g. America/New_York',
  )
  expect(() => validateRecipe({ description: 'd', schedule: '0 8 * * *', timezone: 'America/New_York', run: () => null }, 'UTC')).not.toThrow()
})

it("a report's day in `MST` is refused: Intl reads it as Phoenix, and Denver's day would begin an hour off all summer", () => {
  expect(() => dayRange('2026-07-01', 'MST')).toThrow('time zone "MST" is an abbreviation Intl reads as America/Phoenix\'s time, not America/Denver\'s: name the zone, e.g. America/Denver')
  expect(dayRange('2026-07-01', 'America/Denver').startMs).toBe(Date.parse('2026-07-01T06:00:00Z'))
  // Intl reads PST and CST as Los Angeles and Chicago, daylight saving and all: nothing to refuse.
  expect(dayRange('2026-07-01', 'PST').startMs).toBe(Date.parse('2026-07-01T07:00:00Z'))
  // AST is Anchorage to Intl, not Halifax; NST is Auckland, not St. John's.
  expect(() => dayRange('2026-07-01', 'AST')).toThrow(/e\.g\. America\/Halifax/)
  expect(() => dayRange('2026-07-01', 'NST')).toThrow(/e\.g\. America\/St_Johns/)
})

it("a call's recipient zone `EST` (contact data) is New York's for a US or Canadian number, Intl's own elsewhere", async () => {
  const { givenTimeZone } = await import('../../src/campaigns/calling-window.ts')
  expect(givenTimeZone('EST', 'US')).toBe('America/New_York')
  expect(givenTimeZone('pacific', 'CA')).toBe('America/Los_Angeles')
  // Panama keeps UTC−5 all year: Intl's EST is right there.
  expect(givenTimeZone('EST', 'PA')).toBe('EST')
  // A name Intl does not know is the zone it names, whatever the number.
  expect(givenTimeZone('Eastern', 'JM')).toBe('America/New_York')
  expect(givenTimeZone('Asia/Kolkata', 'US')).toBe('Asia/Kolkata')
  // Taken as given by the call's checks (read once the number's country is known), a name of no zone refused.
  expect(toCallPlan({ agentId: 101, phone: '+12025550101', timeZone: 'Eastern' }).timeZone).toBe('Eastern')
  expect(() => toCallPlan({ agentId: 101, phone: '+12025550101', timeZone: 'Mars/Olympus' })).toThrow(/IANA time zone/)
})

it('HST is taken where a zone is set: Intl reads it as Honolulu keeps it, with no daylight saving either', () => {
  expect(() => validateRecipe({ description: 'd', schedule: '0 8 * * *', timezone: 'HST', run: () => null }, 'UTC')).not.toThrow()
  expect(() => dayRange('2026-07-01', 'HST')).not.toThrow()
})
