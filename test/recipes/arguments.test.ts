import { expect, it } from 'vitest'
import { oneBodyRecipe } from './one-body-recipe.ts'

/** A wrong argument fails with a message naming the function, the argument and the expected shape. */
const h = oneBodyRecipe()

it('names the argument instead of surfacing a driver error', async () => {
  const conversation = await h.errorOf(`await ctx.data.conversation({ status: 'no_answer' } as never)`)
  expect(conversation).toMatch(/^ctx\.data\.conversation\(conversationId\): conversationId: .*expected a conversation id \(a string\), got \{"status":"no_answer"\}\. To filter conversations use ctx\.data\.conversations/)
  expect(conversation).not.toMatch(/SQLite|bind/)
  expect(await h.errorOf(`await ctx.data.conversations({ limit: '5' } as never)`)).toMatch(/^ctx\.data\.conversations\(query\): query\.limit: /)
  expect(await h.errorOf(`await ctx.data.conversations({ stauts: 'busy' } as never)`)).toMatch(/^ctx\.data\.conversations\(query\): .*stauts/)
  expect(await h.errorOf(`await ctx.data.events({ type: 'call.no_anwser' } as never)`)).toMatch(/^ctx\.data\.events\(query\): query\.type/)
  expect(await h.errorOf(`await ctx.campaigns.launchBatch({ agentId: '101', name: 'x', rows: [] } as never)`)).toMatch(/^ctx\.campaigns\.launchBatch\(input\): input\.agentId: must be the agent id/)
  expect(await h.errorOf(`await ctx.campaigns.scheduleCalls({ agentId: 101, phone: '9876543210' } as never)`)).toMatch(/^ctx\.campaigns\.scheduleCalls\(calls\): calls: must be an array of calls/)
  expect(await h.errorOf(`await ctx.mail.send({ to: 'a@b.c', subject: 's' } as never)`)).toMatch(/^ctx\.mail\.send\(message\): message\.text: must be the plain-text body/)
  expect(await h.errorOf(`await ctx.state.get(42 as never)`)).toMatch(/^ctx\.state\.get\(key\): key: must be a string/)
  expect(await h.errorOf(`await ctx.campaigns.runFollowUps({ maxAttempt: 2 } as never)`)).toMatch(/^ctx\.campaigns\.runFollowUps\(options\): .*maxAttempt/)
  // A negative gap is a mistake (it behaved as 0, silently), as maxAttempts: 0 is.
  expect(await h.errorOf(`await ctx.campaigns.runFollowUps({ minGapMs: { no_answer: -5 } })`)).toMatch(/^ctx\.campaigns\.runFollowUps\(options\): options\.minGapMs\.no_answer: /)
  // Every status the calls ledger has is a status to filter by (`queued` was refused).
  expect(await h.errorOf(`await ctx.data.calls({ status: ['queued', 'pending'] })`)).toBeNull()
  expect(await h.errorOf(`await ctx.data.calls({ status: 'zzz' as never })`)).toMatch(/^ctx\.data\.calls\(query\): query\.status: must be a call status \(.*queued.*\) or a list of them/)
  // An instant past Date's range reached Postgres, which answered "out of range for type bigint".
  expect(await h.errorOf(`await ctx.data.conversations({ endedSince: 1e20 })`)).toMatch(/^ctx\.data\.conversations\(query\): query\.endedSince: must be an instant/)
  expect(await h.errorOf(`await ctx.data.calls({ since: -1e20 })`)).toMatch(/^ctx\.data\.calls\(query\): query\.since: must be an instant/)
  // The last instant Date holds: its ISO text in any zone east of UTC is past Date's range ("Invalid time value").
  expect(await h.errorOf(`await ctx.campaigns.scheduleCall({ agentId: 101, phone: '9876543210', scheduledFor: new Date(8.64e15) })`)).toMatch(/^scheduleCall\(call\): call\.scheduledFor: /)
})

it('refuses a scheduled time without its time zone (it would be read in the server’s own zone)', async () => {
  expect(await h.errorOf(`await ctx.campaigns.scheduleCall({ agentId: 101, phone: '9876543210', scheduledFor: '2026-03-12T10:00:00' })`)).toMatch(
    /^scheduleCall\(call\): call\.scheduledFor: must be an ISO 8601 time with its time zone, e\.g\. "2026-01-15T10:00:00\+05:30"/,
  )
  expect(await h.errorOf(`await ctx.campaigns.scheduleCall({ agentId: 101, phone: '9876543210', scheduledFor: '2026-03-12' })`)).toMatch(/scheduledFor: must be an ISO 8601 time with its time zone/)
  expect(await h.errorOf(`await ctx.campaigns.scheduleCall({ request: { agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543210' }], scheduled_for: '2026-03-12T10:00:00' } })`)).toMatch(/scheduled_for: must be an ISO 8601 time with its time zone/)
  expect(await h.errorOf(`await ctx.campaigns.scheduleCall({ agentId: 101, phone: '9876543210', scheduledFor: '2026-03-12T10:00:00+05:30' })`)).toBeNull()
})

// scheduleCall's options went in unchecked: `defaultcountry` was ignored (the number read as Indian), `'India'` was read
// as no country at all ("no country code, and no default country to read it with").
it("checks scheduleCall's and scheduleCalls' options as every other argument, the country codes of every function too", async () => {
  expect(await h.errorOf(`await ctx.campaigns.scheduleCall({ agentId: 101, phone: '415 555 0123' }, { defaultcountry: 'US' } as never)`)).toMatch(/^ctx\.campaigns\.scheduleCall\(options\): .*defaultcountry/)
  expect(await h.errorOf(`await ctx.campaigns.scheduleCall({ agentId: 101, phone: '415 555 0123' }, { defaultCountry: 'India' })`)).toMatch(/^ctx\.campaigns\.scheduleCall\(options\): options\.defaultCountry: must be a country code libphonenumber knows/)
  expect(await h.errorOf(`await ctx.campaigns.scheduleCalls([], { timezone: 'UTC' } as never)`)).toMatch(/^ctx\.campaigns\.scheduleCalls\(options\): .*timezone/)
  expect(await h.errorOf(`await ctx.campaigns.runFollowUps({ defaultCountry: 'XX' })`)).toMatch(/^ctx\.campaigns\.runFollowUps\(options\): options\.defaultCountry: must be a country code/)
  const planned = await h.run(`return (await ctx.campaigns.scheduleCall({ agentId: 101, phone: '415 555 0123' }, { defaultCountry: 'US' })).request.parameters`, true)
  expect(planned.summary).toEqual([{ name: 'customer_phone', value: '+14155550123' }])
  // In any case, as DEFAULT_COUNTRY is read.
  const lower = await h.run(`return (await ctx.campaigns.scheduleCall({ agentId: 101, phone: '415 555 0123' }, { defaultCountry: 'us' })).request.parameters`, true)
  expect(lower.summary).toEqual([{ name: 'customer_phone', value: '+14155550123' }])
})

// A misspelt zone in an option went through unchecked and failed later with Intl's bare "Invalid time zone specified"
// (runFollowUps only once a number needed it).
it('checks the timeZone option of scheduleCall, launchBatch and runFollowUps as an IANA zone', async () => {
  expect(await h.errorOf(`await ctx.campaigns.scheduleCall({ agentId: 101, phone: '+12125550125' }, { timeZone: 'America/NewYork' })`)).toMatch(/^ctx\.campaigns\.scheduleCall\(options\): options\.timeZone: must be an IANA time zone such as "Asia\/Kolkata"/)
  expect(await h.errorOf(`await ctx.campaigns.launchBatch({ agentId: 101, name: 'x', rows: [], timeZone: 'America/NewYork' })`)).toMatch(/^ctx\.campaigns\.launchBatch\(input\): input\.timeZone: must be an IANA time zone/)
  expect(await h.errorOf(`await ctx.campaigns.runFollowUps({ timeZone: 'America/NewYork' })`)).toMatch(/^ctx\.campaigns\.runFollowUps\(options\): options\.timeZone: must be an IANA time zone/)
})

// planFollowUps planned with the planner's own defaults (IN, UTC): a national US number became an Indian one, and a
// number of a country with several zones was timed in UTC, where runFollowUps used DEFAULT_COUNTRY and the recipe's zone.
it('planFollowUps plans as runFollowUps does: the recipe time zone where the number does not decide', async () => {
  const planned = await h.run(
    `const now = ctx.now.getTime()
     const conversation = { conversation_id: 'c0a80000-0000-4000-8000-000000000001_1', agent_id: 101, contact_number: '+12125550125', status: 'no_answer', terminal: 1,
       started_at: now - 7_300_000, ended_at: now - 7_200_000, updated_at: now - 7_200_000, trace_id: 't1', results: null, call_parameters: null, retry: null, retry_context: null }
     const result = ctx.campaigns.planFollowUps({ conversations: [conversation], calls: [], dnc: new Set<string>(), now } as never)
     return result.plans.map((p) => [p.phone, p.timeZone, ctx.timezone])`,
    true,
  )
  const [phone, zone, recipeZone] = (planned.summary as Array<[string, string, string]>)[0]!
  expect(phone).toBe('+12125550125')
  expect(zone).toBe(recipeZone)
  expect(zone).not.toBe('UTC')
})
