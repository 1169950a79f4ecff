import { afterEach, describe, expect, it } from 'vitest'
import { buildDailyReport, dayRange, renderDailyReport } from '../../src/reports/index.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { metrics, startBatchProvider } from './fake-provider.ts'
import { callRow, DAY, DAY_END, DAY_START, EXPECTED, IN_DAY, insertConversations, seedKnownDay, TZ } from './seed.ts'
import { parse } from 'csv-parse/sync'

const statusCounts = (items: Array<{ value: string; count: number }>) => Object.fromEntries(items.map((i) => [i.value, i.count]))

describe('day boundaries', () => {
  it('uses the zone’s local midnight, also on DST days (23 h and 25 h)', () => {
    expect(dayRange(DAY, TZ)).toMatchObject({ startMs: DAY_START, endMs: DAY_END })
    const spring = dayRange('2026-03-08', 'America/New_York')
    expect(new Date(spring.startMs).toISOString()).toBe('2026-03-08T05:00:00.000Z')
    expect(spring.endMs - spring.startMs).toBe(23 * 3_600_000)
    const fall = dayRange('2026-11-01', 'America/New_York')
    expect(new Date(fall.startMs).toISOString()).toBe('2026-11-01T04:00:00.000Z')
    expect(fall.endMs - fall.startMs).toBe(25 * 3_600_000)
    // Chile moves its clocks at midnight: 2026-09-06 00:00 does not exist, the day starts at 01:00 (-03).
    const gap = dayRange('2026-09-06', 'America/Santiago')
    expect(new Date(gap.startMs).toISOString()).toBe('2026-09-06T04:00:00.000Z')
    expect(dayRange('2026-11-20', 'UTC').startMs).toBe(Date.parse('2026-11-20T00:00:00Z'))
  })

  it('rejects impossible dates and unknown zones with one clear line', () => {
    expect(() => dayRange('2026-02-30', TZ)).toThrow('date must be a real calendar day (got "2026-02-30")')
    expect(() => dayRange('20-11-2026', TZ)).toThrow('date must be YYYY-MM-DD')
    expect(() => dayRange(DAY, 'Mars/Olympus')).toThrow('unknown time zone "Mars/Olympus"')
  })
})

describeEachDialect('daily report figures', (dialect) => {
  let rt: TestRuntime | undefined
  let provider: Awaited<ReturnType<typeof startBatchProvider>> | undefined
  afterEach(async () => {
    await rt?.close()
    await provider?.close()
    rt = provider = undefined
  })

  it('counts a seeded day in Asia/Kolkata: statuses, rates to one decimal, groups, follow-ups, trend, webhooks, batches', async () => {
    provider = await startBatchProvider(
      [
        { batch: { id: 7, name: 'diwali-offer', agent_id: 101, status: 'completed', total_recipients: 500, created_at: '2026-11-20T09:00:00+05:30' }, metrics: metrics({ total_processed: 480, completed_count: 300, no_answer_count: 120, busy_count: 40, failed_count: 10, unreachable_count: 6, socket_failure_count: 4, success_count: 300, success_rate: 62.5, avg_duration_seconds: 64.2 }) },
        { batch: { id: 8, name: 'broken-metrics', agent_id: 101, status: 'in_progress', total_recipients: 10, created_at: '2026-11-20T23:59:59+05:30' }, metrics: 'error' },
        // Created the day before (local), not this day's.
        { batch: { id: 6, name: 'yesterday', agent_id: 101, status: 'completed', total_recipients: 5, created_at: '2026-11-19T23:59:59+05:30' }, metrics: metrics({}) },
      ],
      'sk_live_report',
    )
    rt = await createTestRuntime({ dialect, env: { VOICE_API_KEY: 'sk_live_report', VOICE_API_BASE_URL: provider.url } })
    await seedKnownDay(rt)
    const report = await buildDailyReport(rt, { date: DAY, timezone: TZ })

    expect(report.totals.calls).toBe(EXPECTED.calls)
    expect(statusCounts(report.totals.byStatus)).toEqual(EXPECTED.byStatus)
    expect(report.totals.successRate).toBe(EXPECTED.successRate)
    expect(report.totals.connectRate).toBe(EXPECTED.connectRate)
    expect(report.totals.avgDurationSeconds).toBe(EXPECTED.avgDurationSeconds)
    expect(report.totals.failureReasons.slice(0, 3)).toEqual([
      { value: 'no_answer_timeout', count: 4 },
      { value: 'line_busy', count: 3 },
      { value: 'carrier_error', count: 2 },
    ])
    const intent = report.totals.results.find((r) => r.key === 'intent')
    expect(intent?.reported).toBe(8)
    expect(statusCounts(intent?.values ?? [])).toEqual({ interested: 4, not_interested: 2, callback: 1, '-1 not sure': 1 })

    expect(report.conversations.map((c) => c.conversation_id).sort()).toEqual(IN_DAY.map((c) => c.conversation_id).sort())
    for (const c of IN_DAY) expect(report.conversations.find((r) => r.conversation_id === c.conversation_id)?.campaign, c.conversation_id).toBe(c.campaign)

    const agents = Object.fromEntries(report.agents.map((a) => [a.agentId, a.figures]))
    expect(agents[101]?.calls).toBe(15)
    expect(agents[101]?.completed).toBe(5)
    expect(agents[101]?.successRate).toBe(33.3) // 5/15
    expect(agents[101]?.connectRate).toBe(40) // 6/15
    expect(agents[201]?.calls).toBe(6)
    expect(agents[201]?.successRate).toBe(50) // 3/6
    const campaigns = Object.fromEntries(report.campaigns.map((c) => [c.campaign, c.figures]))
    expect(campaigns['diwali-offer']?.calls).toBe(5)
    expect(campaigns['diwali-offer']?.successRate).toBe(60)
    expect(campaigns['no-answer-followup']?.calls).toBe(1)
    expect(campaigns['winback']?.calls).toBe(1)
    expect(campaigns['(direct)']?.calls).toBe(14)

    expect(report.followUps).toEqual({ scheduled: 2, refused: 0, completed: 1, outcomes: [{ value: 'completed', count: 1 }, { value: 'scheduled', count: 1 }] })
    expect(report.webhooks).toEqual({ received: 4, duplicates: 2, rejected: { invalid_signature: 3, stale_timestamp: 1 }, dead: 1, reconciled: 1, source: 'receiver' })

    expect(report.trend.map((d) => d.date)).toEqual(['2026-11-14', '2026-11-15', '2026-11-16', '2026-11-17', '2026-11-18', '2026-11-19', '2026-11-20'])
    expect(report.trend.map((d) => d.calls)).toEqual([0, 0, 0, 0, 0, 2, 21])
    expect(report.change).toMatchObject({ calls: 19, successRate: -11.9, connectRate: -7.1 })

    expect(report.batches.available).toBe(true)
    expect(report.batches.batches.map((b) => [b.id, b.metrics?.success_rate ?? null, b.metricsError !== null])).toEqual([
      [7, 62.5, false],
      [8, null, true],
    ])

    const rendered = renderDailyReport(report)
    expect(rendered.subject).toBe('switchboard daily report — 2026-11-20 (Asia/Kolkata)')
    expect(rendered.text).toContain('Success rate   38.1%')
    expect(rendered.text).toContain('Connect rate   42.9%')
    expect(rendered.text).toContain('Webhooks: received 4 · duplicates 2 · rejected 4 · dead 1 · reconciled 1')
    expect(rendered.text).toContain('rejected by reason: invalid_signature 3, stale_timestamp 1')
    expect(rendered.html).toContain('38.1%')
    expect(rendered.html).toContain('diwali-offer')
    // Every processed call of a batch is in its line, in both parts: 300 + 120 + 40 + 10 + 6 + 4 = 480.
    expect(rendered.text).toContain('480/500 recipients processed, success 62.5% of recipients, completed 300, no answer 120, busy 40, failed 10, unreachable 6, socket failure 4, pending retry 0')
    expect(rendered.html).toContain('completed 300 · no answer 120 · busy 40 · failed 10 · unreachable 6 · socket failure 4 · pending retry 0')
    // The failure reasons past the top five are counted in both parts, as one line.
    expect(report.totals.failureReasonsOther).toBeGreaterThan(0)
    const other = `and ${report.totals.failureReasonsOther} more with other reasons`
    expect(rendered.html).toContain(other)
    expect(rendered.text).toContain(`  ${other}`)
    expect(rendered.html).not.toMatch(/<script|<img|<link|url\(|src=|@import/i)
  })

  // A CRM's or a GitHub's deliveries (named targets of another scheme) counted as the provider's received, duplicates
  // and rejections. A refusal on an unknown target still counts: a provider pointed at a misspelled URL.
  it('webhook health counts the provider\'s deliveries: not a named target\'s of another scheme', async () => {
    rt = await createTestRuntime({ dialect, env: { WEBHOOK_TARGETS: JSON.stringify({ crm: { scheme: 'standard', secrets: 'whsec_Y3JtLXNlY3JldC1jcm0tc2VjcmV0LWNybS1zZWNyZXQ=' }, provider2: { scheme: 'formant', secrets: 'p2-secret' } }) } })
    await seedKnownDay(rt)
    const at = DAY_START + 60_000
    const row = (id: string, target: string) => ({
      event_id: id, target, event_type: 'contact.updated', conversation_id: null, trace_id: null, agent_id: null, body: '{}', headers: '{}', source: 'webhook',
      received_at: at, status: 'processed', attempts: 1, next_attempt_at: at, claimed_by: null, claimed_until: null, last_error: null, processed_at: at, duplicates: 3,
    })
    await rt.store.db.insertInto('webhook_events').values([row('msg_crm_1', 'crm'), { ...row('evt_p2', 'provider2'), event_type: 'call.completed', duplicates: 0 }]).execute()
    await rt.store.db.insertInto('webhook_rejections').values([
      { bucket_at: at, target: 'crm', reason: 'invalid_signature', count: 7 },
      { bucket_at: at, target: 'unknown', reason: 'unknown_target', count: 2 },
    ]).execute()
    const report = await buildDailyReport(rt, { date: DAY, timezone: TZ })
    // The known day's 4 received and the named provider target's 1; the CRM's event, copies and refusals left out.
    expect(report.webhooks).toEqual({ received: 5, duplicates: 2, rejected: { invalid_signature: 3, stale_timestamp: 1, unknown_target: 2 }, dead: 1, reconciled: 1, source: 'receiver' })
  })

  it('never says "no batch" when the search stopped at the provider\'s newest 1,000 batches', async () => {
    const newer = Array.from({ length: 1050 }, (_, i) => ({
      batch: { id: i + 1, name: `newer-${i}`, agent_id: 101, status: 'completed', total_recipients: 5, created_at: '2026-12-15T10:00:00+05:30' },
      metrics: metrics({}),
    }))
    const provider = await startBatchProvider(newer, 'sk_live_report')
    try {
      rt = await createTestRuntime({ dialect, env: { VOICE_API_KEY: 'sk_live_report', VOICE_API_BASE_URL: provider.url } })
      await seedKnownDay(rt)
      const report = await buildDailyReport(rt, { date: DAY, timezone: TZ })
      expect(report.batches).toMatchObject({ available: true, batches: [], searchCut: true })
      const rendered = renderDailyReport(report)
      expect(rendered.text).toContain("Batches (provider): none of that day found; only the provider's newest 1,000 were searched, older ones may belong to it too.")
      expect(rendered.html).not.toContain('No batch was created or scheduled that day.')
      expect(rendered.html).toContain("No batch of that day was found. Only the provider's newest 1,000 batches were searched")
    } finally {
      await provider.close()
    }
  })

  it('says so when the provider is unreachable, and still reports the rest', async () => {
    // A port nobody listens on.
    rt = await createTestRuntime({ dialect, env: { VOICE_API_KEY: 'sk_live_report', VOICE_API_BASE_URL: 'http://127.0.0.1:9' } })
    await seedKnownDay(rt)
    const report = await buildDailyReport(rt, { date: DAY, timezone: TZ })
    expect(report.batches.available).toBe(false)
    expect(report.totals.calls).toBe(EXPECTED.calls)
    const rendered = renderDailyReport(report)
    expect(rendered.text).toMatch(/Batches \(provider\): unavailable — provider unreachable/)
    expect(rendered.html).toContain('Batch metrics are unavailable')
  })

  it('renders a short, friendly report for a day without calls', async () => {
    rt = await createTestRuntime({ dialect, env: { VOICE_API_KEY: 'sk_live_report', VOICE_API_BASE_URL: 'http://127.0.0.1:9' } })
    const report = await buildDailyReport(rt, { date: '2026-11-21', timezone: TZ })
    expect(report.totals).toMatchObject({ calls: 0, successRate: null, connectRate: null, avgDurationSeconds: null })
    const rendered = renderDailyReport(report)
    expect(rendered.text).toContain('No calls ended on 2026-11-21 — a quiet day.')
    expect(rendered.html).toContain('a quiet day')
    expect(rendered.html.length).toBeLessThan(20_000)
    // Header only, BOM first.
    expect(rendered.csv.startsWith('\uFEFFconversation_id,agent_id,')).toBe(true)
    expect(rendered.csv.trim().split('\r\n')).toHaveLength(1)
  })
})

describe('formula neutralisation', () => {
  it('prefixes exactly the cells a spreadsheet would run', async () => {
    const { neutraliseCell } = await import('../../src/reports/index.ts')
    for (const v of ['=1+1', '+91 98', '-2', '@SUM(A1)', '\t=1', '\r=1', '＝1', '＋1', '－1', '＠x']) expect(neutraliseCell(v)).toBe(`'${v}`)
    for (const v of ['', 'ok', ' =1', "'=1", '1-2', 'a=b', '91']) expect(neutraliseCell(v)).toBe(v)
  })
})

describe('the conversations CSV', () => {
  let rt: TestRuntime | undefined
  afterEach(async () => {
    await rt?.close()
    rt = undefined
  })

  it('keeps a results key with a line break in it one header cell: no row, no formula smuggled in', async () => {
    rt = await createTestRuntime({ env: { VOICE_API_KEY: 'sk_live_report', VOICE_API_BASE_URL: 'http://127.0.0.1:9' } })
    await insertConversations(rt, [
      { conversation_id: 'c1', agent_id: 101, contact_number: '+919800000001', status: 'completed', duration_seconds: 5, ended_at: DAY_START + 3_600_000, trace_id: 't1', results: { 'note\n=1+1': 'v', '=cmd': 'w' } },
    ])
    const csv = renderDailyReport(await buildDailyReport(rt, { date: DAY, timezone: TZ })).csv
    expect(csv.startsWith('\uFEFFconversation_id,')).toBe(true)
    const records = parse(csv, { bom: true }) as string[][]
    expect(records).toHaveLength(2)
    expect(records[0]!.slice(-2)).toEqual(["result.=cmd", 'result.note\n=1+1'])
    expect(records[1]!.slice(-2)).toEqual(['w', 'v'])
    expect(csv.split('\r\n').some((line) => line.startsWith('='))).toBe(false)
  })
})

describeEachDialect('follow-ups the provider refused', (dialect) => {
  let rt: TestRuntime | undefined
  afterEach(async () => {
    await rt?.close()
    rt = undefined
  })

  it('are not counted scheduled or placed: said apart, and among the outcomes', async () => {
    rt = await createTestRuntime({ dialect })
    await seedKnownDay(rt)
    await rt.store.db.insertInto('calls').values([
      callRow({ id: 'call_fu_refused', trace_id: null, recipe: 'no-answer-followup', campaign: null, previous: 'conv_01', status: 'rejected', created_at: DAY_START + 3_700_000 }),
      callRow({ id: 'call_fu_failed', trace_id: null, recipe: 'no-answer-followup', campaign: null, previous: 'conv_02', status: 'failed', created_at: DAY_START + 3_800_000 }),
    ]).execute()
    const report = await buildDailyReport(rt, { date: DAY, timezone: TZ })
    expect(report.followUps).toMatchObject({ scheduled: 2, refused: 2, completed: 1 })
    expect(report.followUps.outcomes).toEqual(expect.arrayContaining([{ value: 'rejected', count: 1 }, { value: 'failed', count: 1 }]))
    const { text, html } = renderDailyReport(report)
    expect(text).toContain('Follow-ups: 2 scheduled or placed (calls continuing an earlier conversation), 1 completed so far; 2 more refused by the provider.')
    expect(html).toContain('2 follow-up calls scheduled or placed (calls continuing an earlier conversation); 1 completed so far; 2 more refused by the provider.')
  })
})

describeEachDialect('results keys past the most reported', (dialect) => {
  let rt: TestRuntime | undefined
  afterEach(async () => {
    await rt?.close()
    rt = undefined
  })

  it('are said to be in the CSV, not dropped without a word', async () => {
    rt = await createTestRuntime({ dialect })
    const results = Object.fromEntries(['intent', 'language', 'summary', 'interested', 'callback_requested', 'do_not_call', 'promised_amount'].map((k) => [k, 'x']))
    await insertConversations(rt, [{ conversation_id: 'conv_keys', agent_id: 101, contact_number: '+919800000099', status: 'completed', duration_seconds: 30, ended_at: DAY_START + 3_600_000, trace_id: 'tr_keys', results }])
    const report = await buildDailyReport(rt, { date: DAY, timezone: TZ })
    expect(report.totals.results).toHaveLength(5)
    expect(report.totals.resultKeysOther).toBe(2)
    const { text, html } = renderDailyReport(report)
    expect(text).toContain('  and 2 more results keys, not broken down here (each is a column of the attached CSV)')
    expect(html).toContain('and 2 more results keys, not broken down here (each is a column of the attached CSV)')
  })
})
