import { afterEach, expect, it } from 'vitest'
import { buildDailyReport, renderDailyReport } from '../../src/reports/index.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { metrics, startBatchProvider } from './fake-provider.ts'
import { DAY, DAY_START, insertConversations, TZ } from './seed.ts'

let rt: TestRuntime | undefined
let provider: Awaited<ReturnType<typeof startBatchProvider>> | undefined
afterEach(async () => {
  await rt?.close()
  await provider?.close()
  rt = provider = undefined
})

/** Any way of writing a duration the report has used: "1 min 05 s", "1:05", "65 s", "1m 5s", "0:01:05", "1.1 min". */
const ANY_DURATION = /\b\d+ min \d{2} s\b|\b\d+:\d{2}(?::\d{2})?\b|\b\d+(?:\.\d)? s\b|\b\d+m \d+s\b|\b\d+\.\d min\b/g

it('every duration of the mail, text and HTML, is written one way', async () => {
  provider = await startBatchProvider(
    [{ batch: { id: 3, name: 'spring', agent_id: 101, status: 'completed', total_recipients: 2, created_at: '2026-11-20T09:00:00+05:30' }, metrics: metrics({ total_processed: 2, completed_count: 2, success_count: 2, success_rate: 100, avg_duration_seconds: 65 }) }],
    'sk_live_report',
  )
  rt = await createTestRuntime({ env: { VOICE_API_KEY: 'sk_live_report', VOICE_API_BASE_URL: provider.url } })
  await insertConversations(rt, [
    { conversation_id: 'conv_a', agent_id: 101, contact_number: '+919800000001', status: 'completed', duration_seconds: 60, ended_at: DAY_START + 3_600_000, trace_id: 'tr_a', call_parameters: { campaign: 'spring' } },
    { conversation_id: 'conv_b', agent_id: 101, contact_number: '+919800000002', status: 'completed', duration_seconds: 70, ended_at: DAY_START + 7_200_000, trace_id: 'tr_b', call_parameters: { campaign: 'spring' } },
  ])
  const report = await buildDailyReport(rt, { date: DAY, timezone: TZ })
  expect(report.totals.avgDurationSeconds).toBe(65)
  const { text, html } = renderDailyReport(report)
  // The day's average (headline, agent, campaign) and the batch's, all 65 seconds.
  // Times of day (the footer's, a timestamp's) are not durations.
  const durations = (body: string) => body.replace(/\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})?/g, '').match(ANY_DURATION) ?? []
  const shown = [...durations(text), ...durations(html)]
  expect(shown.length).toBeGreaterThanOrEqual(6)
  expect(new Set(shown)).toEqual(new Set(['1 min 05 s']))
})
