import { afterEach, expect, it } from 'vitest'
import { buildDailyReport } from '../../src/reports/index.ts'
import type { WebhookEvent } from '../../src/upstream/schemas.ts'
import { applyEventToReadModel } from '../../src/webhooks/read-model.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { DAY, DAY_END, DAY_START, TZ } from './seed.ts'

const NEXT_DAY = '2026-11-21'
const iso = (ms: number) => new Date(ms).toISOString()

function event(id: string, call: { started_at: string | null; duration_seconds: number | null }, timestamp: string): WebhookEvent {
  return {
    event_id: `evt_${id}`,
    event_type: 'call.completed',
    timestamp,
    data: {
      call: {
        agent_id: 101, call_parameters: {}, conversation_id: `conv_${id}`, duration_seconds: call.duration_seconds, started_at: call.started_at, ended_at: null,
        failure_reason: null, from_phone: '+918035550101', to_phone: '+919800000001', recording_url: null, status: 'completed', trace_id: `tr_${id}`,
      },
      results: {},
    },
  } as WebhookEvent
}

describeEachDialect('a finished call the provider sent without ended_at', (dialect) => {
  let rt: TestRuntime | undefined
  afterEach(async () => {
    await rt?.close()
    rt = undefined
  })

  // switchboard first saw these the next morning (a late delivery, a reconciliation): with no `ended_at`, each landed on
  // the day it was recorded — the day after it happened — in that day's figures, trend and CSV.
  it('counts on the day it happened: its start plus its duration, else the event\'s own time — not the day it was recorded', async () => {
    const clock = createManualClock(DAY_END + 3 * 3_600_000)
    rt = await createTestRuntime({ dialect, clock })
    const received = clock.now()
    // Started 23:50 local, 5 minutes long: it ended 23:55, on DAY.
    await applyEventToReadModel(rt, event('started', { started_at: iso(DAY_END - 10 * 60_000), duration_seconds: 300 }, iso(DAY_END + 3_600_000)), 'webhook', received)
    // No start either: the event's own time (its `timestamp`, 13:00 local on DAY).
    await applyEventToReadModel(rt, event('stamped', { started_at: null, duration_seconds: null }, iso(DAY_START + 13 * 3_600_000)), 'webhook', received)
    // Started 23:58 and lasted 5 minutes: it ended on the next day, and counts there.
    await applyEventToReadModel(rt, event('late', { started_at: iso(DAY_END - 2 * 60_000), duration_seconds: 300 }, iso(DAY_END + 3 * 60_000)), 'webhook', received)

    const day = await buildDailyReport(rt, { date: DAY, timezone: TZ })
    expect(day.conversations.map((c) => c.conversation_id)).toEqual(['conv_stamped', 'conv_started'])
    expect(day.totals.calls).toBe(2)
    const next = await buildDailyReport(rt, { date: NEXT_DAY, timezone: TZ })
    expect(next.conversations.map((c) => c.conversation_id)).toEqual(['conv_late'])
    // The trend counts each day by the same rule.
    expect(next.trend.slice(-2).map((d) => [d.date, d.calls])).toEqual([[DAY, 2], [NEXT_DAY, 1]])
  })
})
