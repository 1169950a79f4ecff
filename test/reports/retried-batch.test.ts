import { afterEach, expect, it } from 'vitest'
import { buildDailyReport, renderDailyReport } from '../../src/reports/index.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { metrics, startBatchProvider } from './fake-provider.ts'
import { DAY, DAY_START, insertConversations, TZ, type SeedConversation } from './seed.ts'

let rt: TestRuntime | undefined
let provider: Awaited<ReturnType<typeof startBatchProvider>> | undefined
afterEach(async () => {
  await rt?.close()
  await provider?.close()
  rt = provider = undefined
})

/**
 * A batch of 10 contacts on an agent with platform retries: each contact was dialled twice (a conversation per attempt,
 * both with the row's trace id), and 6 contacts completed on their second attempt. The campaign's figures count 20 calls
 * (6 completed: 30 %), the provider's metrics 10 recipients (6 succeeded: 60 %) — in one mail, both said "success".
 */
it('a batch the platform retried: the campaign\'s rate is of calls (attempts), the provider\'s of recipients, and each says so', async () => {
  provider = await startBatchProvider(
    [{ batch: { id: 9, name: 'spring', agent_id: 103, status: 'completed', total_recipients: 10, created_at: '2026-11-20T09:00:00+05:30' }, metrics: metrics({ total_processed: 10, completed_count: 6, no_answer_count: 4, success_count: 6, success_rate: 60, avg_duration_seconds: 65 }) }],
    'sk_live_report',
  )
  rt = await createTestRuntime({ env: { VOICE_API_KEY: 'sk_live_report', VOICE_API_BASE_URL: provider.url } })
  const attempts: SeedConversation[] = []
  for (let i = 0; i < 10; i++) {
    for (const attempt of [1, 2]) {
      attempts.push({
        conversation_id: `conv_spring_${i}_${attempt}`, agent_id: 103, contact_number: `+91980000${String(i).padStart(4, '0')}`,
        status: attempt === 2 && i < 6 ? 'completed' : 'no_answer', duration_seconds: attempt === 2 && i < 6 ? 65 : 0,
        ended_at: DAY_START + 3_600_000 * (2 + attempt) + 60_000 * i, trace_id: `tr_spring_${i}`, call_parameters: { campaign: 'spring' },
      })
    }
  }
  await insertConversations(rt, attempts)
  const report = await buildDailyReport(rt, { date: DAY, timezone: TZ })
  expect(report.campaigns).toMatchObject([{ campaign: 'spring', figures: { calls: 20, completed: 6, successRate: 30 } }])
  const { text, html } = renderDailyReport(report)

  const lines = text.split('\n')
  const byCampaign = lines.findIndex((l) => l.startsWith('By campaign'))
  expect(lines[byCampaign]).toBe('By campaign (calls are attempts: a contact the platform retried counts once per attempt):')
  expect(lines[byCampaign + 2]).toMatch(/^ {4}20 calls · connect 30\.0% · success 30\.0% · avg /)
  expect(text).toContain('Batches (provider; counted per recipient: each contact once, whatever its attempts):')
  expect(text).toContain('  spring (#9, agent 103, completed): 10/10 recipients processed, success 60.0% of recipients,')

  expect(html).toContain('Calls are attempts: a contact the platform retried counts once per attempt.')
  expect(html).toContain('10 of 10 recipients processed · success 60.0% of recipients ·')
  expect(html).toContain('counted per recipient: each contact once, whatever its attempts')
})
