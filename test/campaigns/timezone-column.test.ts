import { afterEach, beforeEach, expect, it } from 'vitest'
import { launchBatch, prepareBatch } from '../../src/campaigns/index.ts'
import { scheduleCall } from '../../src/campaigns/schedule-call.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

/**
 * A contact's time-zone column decides its calling window however the list spells its header. At 05:30 UTC it is
 * 11:00 in India (the recipe's zone) and 22:30 the evening before in Los Angeles: a +1 213 number (the US has
 * several zones, so its own column decides) must wait for 09:00 there.
 */
let rt: TestRuntime
beforeEach(async () => {
  rt = await createTestRuntime({ clock: createManualClock('2026-03-10T05:30:00Z'), env: { DEFAULT_COUNTRY: 'IN', RECIPES_TIMEZONE: 'Asia/Kolkata' } })
})
afterEach(async () => {
  await rt.close()
})

it.each(['timezone', 'Timezone', 'TimeZone', 'time_zone', 'Time Zone', 'TZ'])('a batch row with a "%s" column is called in its own zone', async (header) => {
  const prepared = await prepareBatch(rt, [Buffer.from(`Phone,Name,${header}\n+1 213 555 0100,Ana,America/Los_Angeles\n`)])
  const effects = { dryRun: true, plan: [] }
  const batch = await launchBatch(rt, { agentId: 101, name: 'x', rows: prepared.rows, window: { start: '09:00', end: '21:00' } }, effects)
  expect(batch.rows).toEqual([])
  expect(batch.deferred.map((d) => d.opensAt)).toEqual(['2026-03-10T16:00:00.000Z'])
  // As the real run would: nothing uploaded, so no batch in the dry run's plan either.
  expect(batch.skipped).toBe('outside_window')
  expect(effects.plan).toEqual([])
})

it('a direct call with a "TimeZone" parameter is scheduled in its own zone', async () => {
  const plan = { dryRun: true, plan: [] }
  const outcome = await scheduleCall(rt, { request: { agent_id: 101, parameters: [{ name: 'customer_phone', value: '+12135550100' }, { name: 'TimeZone', value: 'America/Los_Angeles' }] } }, plan)
  expect(outcome).toMatchObject({ status: 'planned' })
  expect(plan.plan).toMatchObject([{ kind: 'call', request: { scheduled_for: '2026-03-10T16:00:00.000Z' } }])
})

it.each(['Campaign', 'CAMPAIGN', ' campaign '])('a batch row\'s own "%s" column is its campaign, under `campaign` (no second column beside it)', async (header) => {
  const prepared = await prepareBatch(rt, [Buffer.from(`Phone,Name,${header}\n9876543210,Asha,spring-promo\n9876543211,Ravi,\n`)])
  const effects = { dryRun: true, plan: [] }
  const batch = await launchBatch(rt, { agentId: 101, name: 'leads', rows: prepared.rows, columns: prepared.columns }, effects)
  expect(batch.rows).toEqual([
    { customer_phone: '+919876543210', Name: 'Asha', campaign: 'spring-promo' },
    { customer_phone: '+919876543211', Name: 'Ravi', campaign: 'leads' },
  ])
})

it.each(['EST', 'est', 'Eastern', 'ET', 'EDT'])('a +1 number\'s "%s" column means New York\'s time, daylight saving and all (Intl reads EST as UTC−5 all year)', async (zone) => {
  await rt.close()
  // 21:30 in New York in July (EDT): closed there, though 20:30 by UTC−5.
  rt = await createTestRuntime({ clock: createManualClock('2026-07-16T01:30:00Z'), env: { DEFAULT_COUNTRY: 'IN', RECIPES_TIMEZONE: 'Asia/Kolkata' } })
  const prepared = await prepareBatch(rt, [Buffer.from(`Phone,Name,timezone\n+1 212 555 0123,Bob,${zone}\n`)])
  const batch = await launchBatch(rt, { agentId: 101, name: 'x', rows: prepared.rows }, { dryRun: true, plan: [] })
  expect(batch.rows).toEqual([])
  expect(batch.deferred.map((d) => d.opensAt)).toEqual(['2026-07-16T13:00:00.000Z'])
})

it('rows of a country split across zones with no timezone column are called in the recipe\'s zone, and the launch says so once', async () => {
  await rt.close()
  const { captureLogs } = await import('../helpers/log-capture.ts')
  const logs = captureLogs()
  rt = await createTestRuntime({ clock: createManualClock('2026-03-10T15:30:00Z'), log: logs.log, env: { DEFAULT_COUNTRY: 'IN', RECIPES_TIMEZONE: 'America/New_York' } })
  const prepared = await prepareBatch(rt, [Buffer.from('Phone,Name,timezone\n+1 213 555 0100,Ana,\n+1 212 555 0123,Bob,\n+1 415 555 0100,Cy,America/Los_Angeles\n+34 612 345 678,Eva,\n')])
  const result = await launchBatch(rt, { agentId: 101, name: 'mixed', rows: prepared.rows }, { dryRun: true, plan: [] })
  const warned = logs.find(/several time zones/)
  expect(warned).toHaveLength(1)
  expect(warned[0]).toMatchObject({ rows: 2, countries: 'US: 2', time_zone: 'America/New_York' })
  // Returned too, for the recipe's run summary (what the dashboard shows; a log line is easily missed).
  expect(result.warnings).toEqual(['batch rows of countries with several time zones have no timezone column (US: 2): their calling window is taken in America/New_York; add a timezone column to call each in their own'])
})

// The rules and the do-not-call list read one number; the provider could dial a second one past them.
it('a call naming customer_phone twice is rejected with the reason, not planned', async () => {
  const plan = { dryRun: true, plan: [] }
  const outcome = await scheduleCall(rt, { request: { agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543210' }, { name: 'customer_phone', value: '+919876543263' }] } }, plan)
  expect(outcome).toMatchObject({ status: 'rejected', reason: 'customer_phone: the call names it more than once; give one number' })
  expect(plan.plan).toEqual([])
})
