import { afterEach, expect, it } from 'vitest'
import { buildDailyReport, renderDailyReport } from '../../src/reports/index.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { DAY, insertConversations, TZ } from './seed.ts'

/**
 * A conversation's status or campaign holding ESC or a right-to-left override put the raw characters into the report's
 * mail (and the dashboard's preview of it): the HTML shows them as escapes, as the dashboard's pages do.
 */
let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})

it('the report HTML shows control and bidi override characters as escapes', async () => {
  rt = await createTestRuntime()
  await insertConversations(rt, [
    { conversation_id: 'conv_esc', agent_id: 101, contact_number: '+919800000001', status: '\u001b[31mred', duration_seconds: 10, ended_at: Date.parse('2026-11-20T05:00:00Z'), trace_id: 'tr_esc', call_parameters: { campaign: 'spring\u202egnirps' } },
  ])
  const { html } = await renderDailyReport(await buildDailyReport(rt, { date: DAY, timezone: TZ }))
  expect(html).not.toMatch(/[\u001b\u202e]/)
  expect(html).toContain('\\u001b[31mred')
  expect(html).toContain('spring\\u202egnirps')
})

// The text part escaped line breaks but not tabs: a result's "\t=cmd" pushed its bar line's columns out of place.
it('the report text part shows a tab from a webhook as an escape', async () => {
  rt = await createTestRuntime()
  await insertConversations(rt, [
    { conversation_id: 'conv_tab', agent_id: 101, contact_number: '+919800000001', status: 'completed', duration_seconds: 10, ended_at: Date.parse('2026-11-20T05:00:00Z'), trace_id: 'tr_tab', results: { note: '\t=cmd' } },
  ])
  const { text } = renderDailyReport(await buildDailyReport(rt, { date: DAY, timezone: TZ }))
  expect(text).not.toContain('\t')
  expect(text).toContain('\\u0009=cmd')
})

// The trend's whole percent was rounded from the tenth shown elsewhere: 5 of 11 (45.45 %, "45.5%") read 46 %.
it("the HTML trend's success rate is the day's own counts rounded once", async () => {
  rt = await createTestRuntime()
  const at = Date.parse('2026-11-20T05:00:00Z')
  await insertConversations(rt, Array.from({ length: 11 }, (_, i) => ({
    conversation_id: `conv_${i}`, agent_id: 101, contact_number: `+9198000000${String(i).padStart(2, '0')}`, status: i < 5 ? 'completed' : 'busy',
    duration_seconds: i < 5 ? 10 : 0, ended_at: at + i, trace_id: `tr_${i}`,
  })))
  const { html, text } = renderDailyReport(await buildDailyReport(rt, { date: DAY, timezone: TZ }))
  expect(text).toContain('Success rate   45.5%')
  expect(html).toMatch(/>45%<\/td>/)
  expect(html).not.toMatch(/>46%<\/td>/)
})
