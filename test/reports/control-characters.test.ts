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
