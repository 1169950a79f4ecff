import { expect, it } from 'vitest'
import { toCallPlan } from '../../src/campaigns/call-input.ts'
import { dayRange } from '../../src/reports/day-range.ts'
import { validateRecipe } from '../../src/recipes/validate.ts'

// Intl takes `EST` as a zone of its own (UTC−5 all year, no daylight saving). RECIPES_TIMEZONE refuses it and a CSV's
// timezone column reads it as New York; the other places a zone is written take the same line.

it("a recipe's own `timezone: 'EST'` is refused, naming the zone meant (it ran an hour off all summer)", () => {
  expect(() => validateRecipe({ description: 'd', schedule: '0 8 * * *', timezone: 'EST', run: () => null }, 'UTC')).toThrow(
    '`timezone` "EST" is an abbreviation Intl reads without daylight saving: name the zone, e.g. America/New_York',
  )
  expect(() => validateRecipe({ description: 'd', schedule: '0 8 * * *', timezone: 'America/New_York', run: () => null }, 'UTC')).not.toThrow()
})

it("a report's day in `PST` is refused: the day would begin an hour off all summer", () => {
  expect(() => dayRange('2026-07-01', 'PST')).toThrow('time zone "PST" is an abbreviation Intl reads without daylight saving: name the zone, e.g. America/Los_Angeles')
  expect(dayRange('2026-07-01', 'America/Los_Angeles').startMs).toBe(Date.parse('2026-07-01T07:00:00Z'))
})

it("a call's recipient zone `EST` (contact data) is New York with its daylight saving, as in a CSV column", () => {
  expect(toCallPlan({ agentId: 101, phone: '+12025550101', timeZone: 'EST' }).timeZone).toBe('America/New_York')
  expect(toCallPlan({ request: { agent_id: 101, parameters: [{ name: 'customer_phone', value: '+12025550101' }] }, timeZone: 'pacific' }).timeZone).toBe('America/Los_Angeles')
  expect(toCallPlan({ agentId: 101, phone: '+12025550101', timeZone: 'Asia/Kolkata' }).timeZone).toBe('Asia/Kolkata')
  expect(() => toCallPlan({ agentId: 101, phone: '+12025550101', timeZone: 'Mars/Olympus' })).toThrow(/IANA time zone/)
})
