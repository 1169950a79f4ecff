import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest'
import { listCalls } from '../../src/calls/list-calls.ts'
import { placeCall } from '../../src/calls/place-call.ts'
import { main } from '../../src/cli.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { startRecordingUpstream, UNKNOWN_CONVERSATION, type RecordingUpstream } from '../campaigns/recording-upstream.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { applyEventToReadModel } from '../../src/webhooks/read-model.ts'
import { makeEvent } from '../webhooks/helpers.ts'

let upstream: RecordingUpstream
beforeAll(async () => {
  upstream = await startRecordingUpstream()
})
afterAll(async () => {
  await upstream.close()
})

const START = Date.parse('2026-03-10T06:00:00Z')

describeEachDialect('calls list', (dialect) => {
  let rt: TestRuntime
  let env: Record<string, string>
  beforeEach(async () => {
    env = { VOICE_API_KEY: 'sk_test_acme', VOICE_API_BASE_URL: upstream.url, WEBHOOK_SECRET: 'whsec_test', LOG_LEVEL: 'silent' }
    rt = await createTestRuntime({ dialect, clock: createManualClock(START), env })
    env = { ...env, DATA_DIR: rt.dataDir, DATABASE_URL: rt.store.url }
    const clock = rt.clock as ReturnType<typeof createManualClock>
    await placeCall(rt, {
      apiKey: 'sk_test_acme',
      request: { agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543210' }], idempotency_key: 'k-1' },
      recipe: 'nightly-batch',
      campaign: 'march',
    })
    await clock.advance(1000)
    await placeCall(rt, {
      apiKey: 'sk_test_acme',
      request: {
        agent_id: 101,
        parameters: [{ name: 'customer_phone', value: '+919876543211' }],
        idempotency_key: 'k-2',
        scheduled_for: '2026-03-11T03:30:00.000Z',
        conversation_id: 'abc_1',
        retry_context: { collected_data: { name: 'Asha' }, retry_stage_id: 'intro' },
      },
      recipe: 'no-answer-followup',
      campaign: 'march',
      previousConversationId: 'abc_1',
    })
    await clock.advance(1000)
    // Through the proxy: no recipe.
    await placeCall(rt, { apiKey: 'sk_test_acme', request: { agent_id: 201, parameters: [{ name: 'customer_phone', value: '+12133734253' }], idempotency_key: 'k-3' } })
  })
  afterEach(async () => {
    await rt.close()
  })

  it('lists newest first, filtered by status and recipe, limited', async () => {
    const all = await listCalls(rt)
    expect(all.map((c) => c.idempotency_key)).toEqual(['k-3', 'k-2', 'k-1'])
    expect((await listCalls(rt, { status: 'scheduled' })).map((c) => c.idempotency_key)).toEqual(['k-2'])
    expect((await listCalls(rt, { recipe: 'nightly-batch' })).map((c) => c.idempotency_key)).toEqual(['k-1'])
    expect((await listCalls(rt, { limit: 1 })).map((c) => c.idempotency_key)).toEqual(['k-3'])
    expect((await listCalls(rt, { agentId: 201 })).map((c) => c.idempotency_key)).toEqual(['k-3'])
    expect(await listCalls(rt, { status: 'rejected' })).toEqual([])
  })

  it('`calls list --json` prints trace id, agent, number, scheduled_for, recipe, key, retry_context and status', async () => {
    let out = ''
    const code = await main(['calls', 'list', '--recipe', 'no-answer-followup', '--json'], { env, stdout: (t) => (out += t), stderr: () => {} })
    expect(code).toBe(0)
    const rows = JSON.parse(out)
    expect(rows).toEqual([
      {
        trace_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        agent_id: 101,
        customer_phone: '+919876543211',
        scheduled_for: '2026-03-11T03:30:00.000Z',
        recipe: 'no-answer-followup',
        campaign: 'march',
        idempotency_key: 'k-2',
        retry_context: { collected_data: { name: 'Asha' }, retry_stage_id: 'intro' },
        previous_conversation_id: 'abc_1',
        status: 'scheduled',
        outcome: null,
        outcome_conversation_id: null,
        error: null,
        next_attempt_at: null,
        waiting_on: null,
        created_at: new Date(START + 1000).toISOString(),
        cursor: expect.any(String),
      },
    ])
  })

  it('shows what a placed call came to: the conversation the provider reported for its trace id', async () => {
    const [placed] = await listCalls(rt, { recipe: 'nightly-batch' })
    const event = makeEvent({ event_type: 'call.no_answer', call: { trace_id: placed!.trace_id!, conversation_id: 'conv_k1_1' } })
    await applyEventToReadModel(rt, event, 'webhook', rt.clock.now())
    let out = ''
    expect(await main(['calls', 'list', '--json'], { env, stdout: (t) => (out += t), stderr: () => {} })).toBe(0)
    const rows = JSON.parse(out) as Array<{ idempotency_key: string; status: string; outcome: string | null; outcome_conversation_id: string | null }>
    expect(rows.map((r) => [r.idempotency_key, r.status, r.outcome, r.outcome_conversation_id])).toEqual([
      ['k-3', 'initiated', null, null],
      ['k-2', 'scheduled', null, null],
      ['k-1', 'initiated', 'no_answer', 'conv_k1_1'],
    ])
    let table = ''
    expect(await main(['calls', 'list', '--recipe', 'nightly-batch'], { env, stdout: (t) => (table += t), stderr: () => {} })).toBe(0)
    expect(table.split('\n')[2]).toMatch(/^\S+\s+initiated\s+no_answer\s+101\s+\+919876543210\b/)
  })

  it('prints a table, and one clear line for a bad flag', async () => {
    let out = ''
    expect(await main(['calls', 'list', '--status', 'initiated'], { env, stdout: (t) => (out += t), stderr: () => {} })).toBe(0)
    const lines = out.trim().split('\n')
    expect(lines[0]).toMatch(/^created_at\s+status\s+outcome\s+agent_id\s+customer_phone\s+scheduled_for\s+recipe\s+trace_id\s+idempotency_key\s+retry_context\s+error$/)
    expect(lines.slice(2, -1).map((l) => l.split(/\s+/)[1])).toEqual(['initiated', 'initiated'])
    expect(lines.at(-1)).toBe('2 call(s); no more')

    // A call the provider refused says why, in the table as in --json.
    await placeCall(rt, { apiKey: 'sk_test_acme', request: { agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543212' }], conversation_id: UNKNOWN_CONVERSATION } })
    let refused = ''
    expect(await main(['calls', 'list', '--status', 'rejected'], { env, stdout: (t) => (refused += t), stderr: () => {} })).toBe(0)
    const row = refused.trim().split('\n')[2]!
    expect(row).toMatch(/\brejected\b.*\+919876543212.*not_found: conversation not found$/)

    let err = ''
    expect(await main(['calls', 'list', '--status', 'done'], { env, stdout: () => {}, stderr: (t) => (err += t) })).toBe(2)
    expect(err).toBe('error: --status must be one of queued, pending, initiated, scheduled, failed, rejected (got "done")\n')
    err = ''
    expect(await main(['calls', 'list', '--limit', '0'], { env, stdout: () => {}, stderr: (t) => (err += t) })).toBe(2)
    expect(err).toBe('error: --limit must be from 1 to 1000 (got 0)\n')
  })

  it('pages with --limit and --before instead of stopping silently: the last line says how to get the next page', async () => {
    const keys: string[] = []
    let before: string[] = []
    for (let page = 0; page < 5; page++) {
      let out = ''
      expect(await main(['calls', 'list', '--limit', '1', ...before], { env, stdout: (t) => (out += t), stderr: () => {} })).toBe(0)
      const lines = out.trim().split('\n')
      keys.push(...lines.slice(2, -1).map((l) => /k-\d/.exec(l)![0]))
      const next = /older ones: calls list --before (\S+) --limit 1$/.exec(lines.at(-1)!)
      if (!next) {
        expect(lines.at(-1)).toMatch(/^\d+ call\(s\) on this page; no more$/)
        break
      }
      before = ['--before', next[1]!]
    }
    expect(keys).toEqual(['k-3', 'k-2', 'k-1'])

    // --json rows carry the cursor of each row.
    let out = ''
    await main(['calls', 'list', '--json', '--limit', '2'], { env, stdout: (t) => (out += t), stderr: () => {} })
    const rows = JSON.parse(out) as Array<{ idempotency_key: string; cursor: string }>
    out = ''
    await main(['calls', 'list', '--json', '--before', rows[1]!.cursor], { env, stdout: (t) => (out += t), stderr: () => {} })
    expect((JSON.parse(out) as Array<{ idempotency_key: string }>).map((r) => r.idempotency_key)).toEqual(['k-1'])

    let err = ''
    expect(await main(['calls', 'list', '--before', 'nonsense'], { env, stdout: () => {}, stderr: (t) => (err += t) })).toBe(2)
    expect(err).toBe('error: --before takes the cursor a previous page printed (got "nonsense")\n')
  })

  // The follow-up planner's refusal and the do-not-call warning point at `calls list --phone`, which did not exist.
  it('--phone lists the calls to one contact, however its number is written', async () => {
    for (const phone of ['+919876543211', '098765 43211', '98765-43211']) {
      let out = ''
      expect(await main(['calls', 'list', '--phone', phone, '--json'], { env: { ...env, DEFAULT_COUNTRY: 'IN' }, stdout: (t) => (out += t), stderr: () => {} })).toBe(0)
      expect((JSON.parse(out) as Array<{ idempotency_key: string }>).map((r) => r.idempotency_key), phone).toEqual(['k-2'])
    }
    // No phone number at all: a mistake (exit 2), not an empty list.
    let err = ''
    expect(await main(['calls', 'list', '--phone', 'abc'], { env, stdout: () => {}, stderr: (t) => (err += t) })).toBe(2)
    expect(err).toMatch(/^error: --phone must be a phone number \(got "abc": .+\)\n$/)
  })

  it('the next-page hint keeps the filters: following it pages through the same calls, not through all of them', async () => {
    await (rt.clock as ReturnType<typeof createManualClock>).advance(1000)
    await placeCall(rt, {
      apiKey: 'sk_test_acme',
      request: { agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543212' }], idempotency_key: 'k-4' },
      recipe: 'nightly-batch',
      campaign: 'march',
    })
    const keys: string[] = []
    let argv = ['calls', 'list', '--recipe', 'nightly-batch', '--status', 'initiated', '--limit', '1']
    for (let page = 0; page < 5; page++) {
      let out = ''
      expect(await main(argv, { env, stdout: (t) => (out += t), stderr: () => {} })).toBe(0)
      const lines = out.trim().split('\n')
      keys.push(...lines.slice(2, -1).map((l) => /k-\d/.exec(l)![0]))
      const hint = /older ones: (calls list .*)$/.exec(lines.at(-1)!)
      if (!hint) break
      expect(hint[1]).toMatch(/^calls list --recipe nightly-batch --status initiated --before \S+ --limit 1$/)
      argv = hint[1]!.split(' ')
    }
    expect(keys).toEqual(['k-4', 'k-1'])
  })
})
