import { expect, it } from 'vitest'
import { oneBodyRecipe } from './one-body-recipe.ts'

/**
 * The toolkit's pure helpers, as ctx.campaigns and ctx.reports hand them to a recipe, check their arguments as every
 * other member does: a mistake names the function and the argument, not an internal TypeError or Intl's message.
 */
const h = oneBodyRecipe()

it('time zones and instants: named, not "Invalid time zone specified" or "Invalid time value"', async () => {
  expect(await h.errorOf(`ctx.reports.yesterday(ctx.now.getTime(), 'Mars/Base')`)).toMatch(/^ctx\.reports\.yesterday\(timezone\): timezone: unknown time zone "Mars\/Base"/)
  expect(await h.errorOf(`ctx.reports.yesterday('2026-01-15' as never, 'UTC')`)).toMatch(/^ctx\.reports\.yesterday\(nowMs\): nowMs: must be an instant/)
  expect(await h.errorOf(`ctx.reports.dayRange('2026-01-15', 'Bad/Tz')`)).toMatch(/^ctx\.reports\.dayRange\(timezone\): timezone: /)
  expect(await h.errorOf(`ctx.campaigns.zonedTimeToEpoch({ year: 2026, month: 1, day: 15 }, 600, 'Bad/Tz')`)).toMatch(/^ctx\.campaigns\.zonedTimeToEpoch\(timeZone\): timeZone: must be an IANA time zone/)
  expect(await h.errorOf(`ctx.campaigns.localTime(0, 'X/Y')`)).toMatch(/^ctx\.campaigns\.localTime\(timeZone\): timeZone: /)
  expect(await h.errorOf(`ctx.campaigns.nextCallingTime(0, 'Nope/Zone')`)).toMatch(/^ctx\.campaigns\.nextCallingTime\(timeZone\): timeZone: /)
  expect(await h.errorOf(`ctx.campaigns.nextCallingTime('2026-01-15T10:00:00Z' as never, 'Asia/Kolkata')`)).toMatch(/^ctx\.campaigns\.nextCallingTime\(at\): at: must be an instant/)
  expect(await h.errorOf(`ctx.campaigns.nextCallingTime(NaN, 'Asia/Kolkata')`)).toMatch(/^ctx\.campaigns\.nextCallingTime\(at\): at: must be an instant/)
  expect(await h.errorOf(`return [ctx.reports.yesterday(ctx.now.getTime(), 'Asia/Kolkata'), ctx.campaigns.nextCallingTime(ctx.now.getTime(), 'Asia/Kolkata'), ctx.campaigns.localTime(0, 'UTC').hour]`)).toBeNull()
})

it('zonedTimeToEpoch refuses a day, month or minute out of range instead of rolling over', async () => {
  expect(await h.errorOf(`ctx.campaigns.zonedTimeToEpoch({ year: 2026, month: 2, day: 30 }, 600, 'Asia/Kolkata')`)).toMatch(/^ctx\.campaigns\.zonedTimeToEpoch\(date\): date\.day: must be a day the month has/)
  expect(await h.errorOf(`ctx.campaigns.zonedTimeToEpoch({ year: 2026, month: 13, day: 1 }, 600, 'Asia/Kolkata')`)).toMatch(/^ctx\.campaigns\.zonedTimeToEpoch\(date\): date\.month: must be a month, 1 to 12/)
  expect(await h.errorOf(`ctx.campaigns.zonedTimeToEpoch({ year: 2026, month: 1, day: 15 }, 1500, 'Asia/Kolkata')`)).toMatch(/^ctx\.campaigns\.zonedTimeToEpoch\(minutes\): minutes: must be 0 to 1440/)
  expect(await h.errorOf(`return ctx.campaigns.zonedTimeToEpoch({ year: 2028, month: 2, day: 29 }, 600, 'Asia/Kolkata')`)).toBeNull()
})

it('calling windows are checked where they are passed, naming the function and the argument', async () => {
  expect(await h.errorOf(`await ctx.campaigns.scheduleCall({ agentId: 101, phone: '9876543210', window: { start: '25:00', end: '10:00' } })`)).toMatch(/^scheduleCall\(call\): call\.window\.start: must be a time of day, 00:00 to 24:00/)
  expect(await h.errorOf(`await ctx.campaigns.scheduleCall({ agentId: 101, phone: '9876543210', window: { start: '21:00', end: '09:00' } })`)).toMatch(/^scheduleCall\(call\): call\.window\.end: must be after start/)
  expect(await h.errorOf(`ctx.campaigns.nextCallingTime(0, 'UTC', { start: '10:00', end: '09:60' })`)).toMatch(/^ctx\.campaigns\.nextCallingTime\(window\): window\.end: must be a time of day/)
  expect(await h.errorOf(`await ctx.campaigns.scheduleCall({ agentId: 101, phone: '9876543210', window: { start: '10:00', end: '24:00' } })`)).toBeNull()
})

it('an idempotency key too long is said to be once', async () => {
  const error = await h.errorOf(`await ctx.campaigns.scheduleCall({ agentId: 101, phone: '9876543210', idempotencyKey: 'k'.repeat(256) })`)
  expect(error).toMatch(/^scheduleCall\(call\): call\.idempotencyKey: must be at most 255 characters \(a UUID is 36\) — /)
  expect(error?.match(/at most 255/g)).toHaveLength(1)
})

it('phone and CSV helpers: the argument named, not an internal TypeError', async () => {
  expect(await h.errorOf(`ctx.campaigns.normalizePhone(9876543210 as never)`)).toMatch(/^ctx\.campaigns\.normalizePhone\(phone\): phone: must be a string/)
  expect(await h.errorOf(`ctx.campaigns.headerKey(5 as never)`)).toMatch(/^ctx\.campaigns\.headerKey\(header\): header: must be a string/)
  expect(await h.errorOf(`ctx.campaigns.findPhoneColumn('phone' as never)`)).toMatch(/^ctx\.campaigns\.findPhoneColumn\(headers\): headers: must be an array of strings/)
  expect(await h.errorOf(`ctx.campaigns.dedupeBy([1, 2, 1], undefined as never)`)).toMatch(/^ctx\.campaigns\.dedupeBy\(key\): key: must be a function/)
  expect(await h.errorOf(`ctx.campaigns.planFollowUps({} as never)`)).toMatch(/^ctx\.campaigns\.planFollowUps\(input\): input\.conversations: /)
  expect(await h.errorOf(`ctx.reports.renderDailyReport({} as never)`)).toMatch(/^ctx\.reports\.renderDailyReport\(report\): report\.date: /)
  expect(await h.errorOf(`await ctx.campaigns.prepareBatch(ctx.config.dataDir)`)).toMatch(/^ctx\.campaigns\.prepareBatch\(source\): source: is a folder, not a file/)
  expect(await h.errorOf(`await ctx.campaigns.loadFollowUpInputs({ since: 'yesterday' } as never)`)).toMatch(/^ctx\.campaigns\.loadFollowUpInputs\(options\): options\.since: must be an instant/)
  expect(await h.errorOf(`const { kept } = ctx.campaigns.dedupeBy(['a', 'b', 'a'], (x) => x); const inputs = await ctx.campaigns.loadFollowUpInputs({ since: 0 })
    const plan = ctx.campaigns.planFollowUps({ ...inputs, dnc: await ctx.campaigns.loadDncList(), now: ctx.now.getTime() })
    return [kept.length, ctx.campaigns.headerKey('Mobile No.'), ctx.campaigns.findPhoneColumn(['Name', 'Mobile No']), plan.plans.length, ctx.campaigns.normalizePhone('98765 43210').ok]`)).toBeNull()
})

// A CSV whose phone column is named otherwise gave `row.phone` undefined for every row: the parts joined to the same
// text, every contact after the first got the first one's key, and its call was refused as a duplicate, silently.
it('deterministicKey refuses a missing part rather than giving every call the same key', async () => {
  expect(await h.errorOf(`ctx.campaigns.deterministicKey('spring', ({} as Record<string, string>).phone!)`)).toMatch(/^ctx\.campaigns\.deterministicKey\(parts\): parts\[1\]: is undefined \(a missing value: every call would get the same key\) — expected one or more parts/)
  expect(await h.errorOf(`ctx.campaigns.deterministicKey('spring', '')`)).toMatch(/^ctx\.campaigns\.deterministicKey\(parts\): parts\[1\]: is empty/)
  expect(await h.errorOf(`ctx.campaigns.deterministicKey('spring', NaN)`)).toMatch(/^ctx\.campaigns\.deterministicKey\(parts\): parts\[1\]: must be a non-empty string or a finite number/)
  expect(await h.errorOf(`ctx.campaigns.deterministicKey()`)).toMatch(/^ctx\.campaigns\.deterministicKey\(parts\): parts: no parts given/)
  expect(await h.errorOf(`const a = ctx.campaigns.deterministicKey('spring', '+919876543210', 1); const b = ctx.campaigns.deterministicKey('spring', '+919876543211', 1)
    if (a === b || !/^[0-9a-f]{8}-[0-9a-f]{4}-5/.test(a)) throw new Error('keys')`)).toBeNull()
})
