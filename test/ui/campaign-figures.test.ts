import { afterEach, expect, it } from 'vitest'
import { dayRange } from '../../src/reports/day-range.ts'
import { buildTrend } from '../../src/reports/trend.ts'
import { campaignFigures } from '../../src/ui/campaign-figures.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

const TZ = 'Asia/Kolkata'
const DAY = '2026-03-10'

/**
 * The campaigns page builds one 30-day trend with the day's own figures from the rows it already read (the report's
 * way), and takes the week from its end: the same figures as counting each trend day by day, at a fraction of the reads.
 */
describeEachDialect('campaign figures', (dialect) => {
  let rt: TestRuntime | undefined
  afterEach(async () => {
    await rt?.close()
    rt = undefined
  })

  it('give the trends the day-by-day counts give, the day itself included', async () => {
    rt = await createTestRuntime({ dialect, env: { RECIPES_TIMEZONE: TZ } })
    const statuses = ['completed', 'no_answer', 'busy', 'completed', 'failed']
    let n = 0
    for (const [offset, count] of [[0, 7], [-1, 3], [-6, 4], [-7, 2], [-29, 5], [-30, 1]] as const) {
      const { startMs } = dayRange(new Date(Date.parse(`${DAY}T00:00:00Z`) + offset * 86_400_000).toISOString().slice(0, 10), TZ)
      for (let i = 0; i < count; i++, n++) {
        const status = statuses[n % statuses.length]!
        const ended = startMs + 3_600_000 + i * 60_000
        await rt.store.db.insertInto('conversations').values({
          conversation_id: `conv_${n}`, agent_id: 101 + (n % 2), contact_number: `+9198765432${String(n).padStart(2, '0')}`, status, terminal: 1, duration_seconds: 30,
          started_at: ended - 30_000, ended_at: ended, failure_reason: null, trace_id: `tr_${n}`, from_phone: null, results: null, call_parameters: '{}',
          last_event_at: ended, source: 'webhook', created_at: ended, updated_at: ended,
        }).execute()
      }
    }
    const figures = await campaignFigures(rt, DAY, TZ)
    const week = await buildTrend(rt, DAY, TZ, 7)
    const month = await buildTrend(rt, DAY, TZ, 30)
    expect(figures.week).toEqual(week.trend)
    expect(figures.month).toEqual(month.trend)
    expect(figures.month.at(-1)).toMatchObject({ date: DAY, calls: 7 })
    expect(figures.month[0]).toMatchObject({ calls: 5 })
    expect(figures.agents.map((a) => [a.agentId, a.figures.calls])).toEqual([[101, 4], [102, 3]])
  })
})
