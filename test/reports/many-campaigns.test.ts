import { afterEach, expect, it } from 'vitest'
import { buildDailyReport, renderDailyReport } from '../../src/reports/index.ts'
import { GROUPS_IN_MAIL } from '../../src/reports/shown-groups.ts'
import { createApp } from '../../src/server.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { DAY, DAY_START, insertConversations, TZ, type SeedConversation } from './seed.ts'

/**
 * A campaign is whatever the calls were given — a batch's `campaign` column, say. One per row (a customer id put in
 * that column) made the report mail a table of every conversation and the Campaigns page a row per call. Both list
 * the busiest campaigns and count the rest; the CSV keeps each call with its campaign.
 */
const TOKEN = 'many-campaigns-token-0123456789abcdef'
const campaignOf = (i: number) => (i < 3 ? 'big' : i < 5 ? 'mid' : `customer-${String(i).padStart(4, '0')}`)
const N = 303 // big: 3 calls, mid: 2, and 298 campaigns of one call

let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})

it('the report mail lists the busiest campaigns and counts the rest; the Campaigns page too, with a larger bound', async () => {
  rt = await createTestRuntime({ env: { ADMIN_TOKEN: TOKEN, RECIPES_TIMEZONE: TZ, VOICE_API_KEY: 'sk_live_report', VOICE_API_BASE_URL: 'http://127.0.0.1:9' }, clock: createManualClock('2026-11-21T02:30:00Z') })
  const day: SeedConversation[] = Array.from({ length: N }, (_, i) => ({
    conversation_id: `conv_${i}`, agent_id: 101, contact_number: `+9198${String(i).padStart(8, '0')}`, status: 'completed', duration_seconds: 30,
    ended_at: DAY_START + 60_000 + i * 1_000, trace_id: `tr_${i}`, call_parameters: { campaign: campaignOf(i) },
  }))
  await insertConversations(rt, day)
  const report = await buildDailyReport(rt, { date: DAY, timezone: TZ })
  expect(report.campaigns).toHaveLength(300)
  const rendered = renderDailyReport(report)
  const more = `and ${300 - GROUPS_IN_MAIL} more campaigns with ${N - 5 - (GROUPS_IN_MAIL - 2)} calls between them (each call is in the CSV)`
  expect(rendered.html).toContain(more)
  expect(rendered.text).toContain(more)
  expect(rendered.html.match(/customer-\d{4}/g)).toHaveLength(GROUPS_IN_MAIL - 2)
  expect(rendered.text.indexOf('big')).toBeLessThan(rendered.text.indexOf('mid'))
  // The CSV has every call with its campaign.
  expect(rendered.csv.match(/customer-\d{4}/g)).toHaveLength(298)

  const page = await (await createApp(rt).fetch(new Request(`http://127.0.0.1/ui/campaigns?date=${DAY}`, { headers: { authorization: `Bearer ${TOKEN}` } }))).text()
  expect(page.match(/customer-\d{4}/g)).toHaveLength(198)
  expect(page).toContain('… and 100 more campaigns with 100 calls between them, not shown')
})
