import { randomBytes } from 'node:crypto'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { H3, serve } from 'h3'
import { createRuntime } from '../../src/runtime.ts'
import { createSilentLogger } from '../../src/utils/logger.ts'
import {
  acquireLease,
  drainDue,
  replayEvent,
  requeueEvent,
  getConversation,
  reconcile,
  listConversations,
  purgeOldEvents,
  startWebhookWorkers,
  webhookHealth,
  signStandard,
  synthesizeEvent,
} from '../../src/webhooks/index.ts'
import type { PipelineEvent, ProcessedEvent } from '../../src/events/hooks.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { pendingRow } from '../../src/webhooks/inbox.ts'
import { nextTurn } from '../../src/utils/next-turn.ts'
import { contactKey } from '../../src/campaigns/contact-key.ts'
import { providerTimeMs } from '../../src/utils/iso-datetime.ts'
import { START, cliEnv, countEvents, createHarness, makeEvent, runCli, type Harness } from './helpers.ts'

async function statusOf(h: Harness, eventId: string): Promise<string | undefined> {
  const row = await h.rt.store.db.selectFrom('webhook_events').select('status').where('event_id', '=', eventId).executeTakeFirst()
  return row?.status
}

async function waitForStatus(h: Harness, eventId: string, status: string): Promise<void> {
  await vi.waitFor(async () => expect(await statusOf(h, eventId)).toBe(status), { timeout: 5000, interval: 10 })
}

describeEachDialect('webhook processing', (dialect) => {
  let h: Harness
  let stop: (() => Promise<void>) | undefined
  afterEach(async () => {
    await stop?.()
    stop = undefined
    await h?.close()
  })

  it('processes right after the commit: read model (transcript array, call_parameters) and hooks', async () => {
    h = await createHarness(dialect)
    const seen: ProcessedEvent[] = []
    h.rt.hooks.on('test', (e) => void seen.push(e))
    stop = startWebhookWorkers(h.rt)
    const event = makeEvent()
    expect((await h.send(event)).status).toBe(204)
    await waitForStatus(h, event.event_id, 'processed')
    expect(seen).toHaveLength(1)
    expect(seen[0]).toMatchObject({ eventId: event.event_id, eventType: 'call.completed', target: 'formant', source: 'webhook', receivedAt: h.clock.now() })
    expect(seen[0]!.event.data.call.conversation_id).toBe(event.data.call.conversation_id)
    const conv = await getConversation(h.rt, event.data.call.conversation_id)
    expect(conv).toMatchObject({
      agent_id: 101, status: 'completed', terminal: true, contact_number: '+919876543210', duration_seconds: 42,
      started_at: Date.parse('2026-03-01T09:58:00Z'), ended_at: Date.parse('2026-03-01T09:58:42Z'),
      call_parameters: { customer_phone: '+919876543210', name: 'Asha' }, results: { intent: 'pay_later' },
      trace_id: event.data.call.trace_id, source: 'webhook', last_event_id: event.event_id,
      retry: { attempt_number: 1, is_final_attempt: true, max_attempts: 1, next_retry_at: null },
    })
    expect(conv!.transcript).toEqual([
      { role: 'agent', message: 'Namaste, am I speaking with Asha?' },
      { role: 'human', message: 'Yes — हाँ, बोलिए' },
    ])
    expect((await listConversations(h.rt, { agentId: 101, terminal: true })).map((c) => c.conversation_id)).toEqual([event.data.call.conversation_id])
    expect(await listConversations(h.rt, { agentId: 999 })).toEqual([])
  })

  it('concurrent duplicates are stored once and processed once', async () => {
    h = await createHarness(dialect)
    let calls = 0
    h.rt.hooks.on('count', () => void calls++)
    stop = startWebhookWorkers(h.rt)
    const event = makeEvent()
    await Promise.all(Array.from({ length: 10 }, () => h.send(event)))
    await waitForStatus(h, event.event_id, 'processed')
    await h.send(event) // a late retry from the provider
    await h.clock.advance(5_000)
    expect(calls).toBe(1)
    expect(await countEvents(h.rt)).toBe(1)
  })

  it('out-of-order events keep the terminal status and the newest outcome; missing fields are filled', async () => {
    h = await createHarness(dialect)
    stop = startWebhookWorkers(h.rt)
    const conversation_id = 'conv-order_1'
    const completed = makeEvent({ event_id: 'evt_done', timestamp: '2026-03-01T09:59:00Z', call: { conversation_id } })
    const earlier = makeEvent({
      event_id: 'evt_early', event_type: 'call.no_answer', timestamp: '2026-03-01T09:50:00Z',
      call: { conversation_id, call_parameters: {}, duration_seconds: null, recording_url: 'https://rec.example/1.wav' },
    })
    const lateNonTerminal = makeEvent({ event_id: 'evt_live', timestamp: '2026-03-01T10:05:00Z', call: { conversation_id, status: 'in_progress' } })
    for (const e of [completed, earlier, lateNonTerminal]) {
      expect((await h.send(e)).status).toBe(204)
      await waitForStatus(h, e.event_id, 'processed')
    }
    const conv = await getConversation(h.rt, conversation_id)
    expect(conv).toMatchObject({ status: 'completed', terminal: true, duration_seconds: 42, last_event_id: 'evt_done', recording_url: 'https://rec.example/1.wav' })
    expect(conv!.call_parameters).toEqual({ customer_phone: '+919876543210', name: 'Asha' })
    expect(conv!.transcript).toHaveLength(2)
    // A newer terminal outcome does replace an older one.
    const later = makeEvent({ event_id: 'evt_later', event_type: 'call.busy', timestamp: '2026-03-01T10:10:00Z', call: { conversation_id } })
    await h.send(later)
    await waitForStatus(h, 'evt_later', 'processed')
    expect((await getConversation(h.rt, conversation_id))!.status).toBe('busy')
  })

  it('one batch holding several events per conversation, new and existing ones, merges as if applied one by one', async () => {
    h = await createHarness(dialect)
    const existing = makeEvent({ event_id: 'evt_known', event_type: 'call.no_answer', timestamp: '2026-03-01T09:00:00Z', call: { conversation_id: 'conv-known', status: 'no_answer', recording_url: 'https://rec.example/k.wav' } })
    await h.send(existing)
    await drainDue(h.rt)
    const conversation_id = 'conv-batch_1'
    const batch = [
      makeEvent({ event_id: 'evt_b_done', timestamp: '2026-03-01T09:59:00Z', call: { conversation_id } }),
      makeEvent({ event_id: 'evt_b_early', event_type: 'call.no_answer', timestamp: '2026-03-01T09:50:00Z', call: { conversation_id, call_parameters: {}, duration_seconds: null, recording_url: 'https://rec.example/1.wav' } }),
      makeEvent({ event_id: 'evt_b_live', timestamp: '2026-03-01T10:05:00Z', call: { conversation_id, status: 'in_progress' } }),
      makeEvent({ event_id: 'evt_b_busy', event_type: 'call.busy', timestamp: '2026-03-01T10:10:00Z', call: { conversation_id, status: 'busy', recording_url: null } }),
      // The known conversation: a newer terminal outcome without a recording keeps the one it had.
      makeEvent({ event_id: 'evt_known_2', timestamp: '2026-03-01T09:30:00Z', call: { conversation_id: 'conv-known', recording_url: null } }),
      ...Array.from({ length: 300 }, (_, i) => makeEvent({ event_id: `evt_many_${i}`, call: { conversation_id: `conv-many_${i % 150}` } })),
    ]
    for (const e of batch) expect((await h.send(e)).status).toBe(204)
    const outcomes = await drainDue(h.rt, { batch: 500 })
    expect(outcomes.filter((o) => o.status === 'processed')).toHaveLength(batch.length)
    expect(await getConversation(h.rt, conversation_id)).toMatchObject({
      status: 'busy', terminal: true, last_event_id: 'evt_b_busy', recording_url: 'https://rec.example/1.wav', duration_seconds: 42,
      call_parameters: { customer_phone: '+919876543210', name: 'Asha' },
    })
    const known = await getConversation(h.rt, 'conv-known')
    expect(known).toMatchObject({ status: 'completed', last_event_id: 'evt_known_2', recording_url: 'https://rec.example/k.wav' })
    expect(known!.created_at).toBeLessThanOrEqual(known!.updated_at)
    expect(await listConversations(h.rt, { limit: 1000 })).toHaveLength(152)
  })

  it('a failing hook retries with backoff, dead-letters, and replay then succeeds (admin and CLI)', async () => {
    h = await createHarness(dialect, { PROCESSING_MAX_ATTEMPTS: '3', ADMIN_TOKEN: 'a-long-admin-token-123' })
    let broken = true
    let calls = 0
    h.rt.hooks.on('flaky', () => {
      calls++
      if (broken) throw new Error('downstream is down')
    })
    stop = startWebhookWorkers(h.rt)
    const event = makeEvent()
    await h.send(event)
    await waitForStatus(h, event.event_id, 'failed')
    const first = await h.rt.store.db.selectFrom('webhook_events').selectAll().where('event_id', '=', event.event_id).executeTakeFirstOrThrow()
    expect(first.attempts).toBe(1)
    expect(first.last_error).toMatch(/hook "flaky" failed: downstream is down/)
    expect(first.next_attempt_at).toBeGreaterThan(h.clock.now())
    await h.clock.advance(500) // not yet due
    expect(calls).toBe(1)
    await h.clock.advance(first.next_attempt_at - h.clock.now() + 1_000)
    await vi.waitFor(async () => {
      await h.clock.advance(100)
      expect(calls).toBe(2)
    }, { timeout: 8000, interval: 20 })
    // Steps well inside a claim (CLAIM_MS, 10 s): on a loaded machine a batch can take tens of real ms, and
    // 5-second steps every 20 ms let its claim lapse mid-batch, so a second drain ran the hook again.
    await vi.waitFor(async () => {
      await h.clock.advance(1_000)
      expect(await statusOf(h, event.event_id)).toBe('dead')
    }, { timeout: 8000, interval: 20 })
    expect(calls).toBe(3)
    await h.clock.advance(3_600_000)
    expect(calls).toBe(3) // dead stays dead
    expect((await webhookHealth(h.rt, 0, h.clock.now() + 1)).dead).toBe(1)

    // Admin replay runs it now, in this process.
    broken = false
    const res = await h.app.fetch(new Request(`http://localhost/admin/events/${event.event_id}/replay`, { method: 'POST', headers: { authorization: 'Bearer a-long-admin-token-123' } }))
    expect(res.status).toBe(200)
    expect(((await res.json()) as { data: { status: string } }).data.status).toBe('processed')
    expect(await statusOf(h, event.event_id)).toBe('processed')
    expect(await getConversation(h.rt, event.data.call.conversation_id)).toBeDefined()

    // CLI replay hands it to the running service (this harness's worker) and reports the outcome.
    broken = true
    // Real seconds for the CLI: a node process with the TypeScript loader can take several to start on a
    // loaded machine (the suite runs files in parallel).
    const cli = runCli(['events', 'replay', event.event_id, '--wait', '30'], cliEnv(h.rt))
    await vi.waitFor(async () => expect(await statusOf(h, event.event_id)).not.toBe('processed'), { timeout: 20_000, interval: 20 })
    broken = false
    await vi.waitFor(async () => {
      await h.clock.advance(1_000)
      expect(await statusOf(h, event.event_id)).toBe('processed')
    }, { timeout: 8000, interval: 50 })
    const done = await cli
    expect(done.code).toBe(0)
    expect(done.out).toContain(`${event.event_id}: processed`)
  }, 60_000)

  it('a replay that fails keeps the automatic retries of an event that had them; a replayed dead event stays dead', async () => {
    h = await createHarness(dialect, { PROCESSING_MAX_ATTEMPTS: '3' })
    h.rt.hooks.on('flaky', () => {
      throw new Error('downstream is down')
    })
    const failed = makeEvent()
    const dead = makeEvent()
    for (const e of [failed, dead]) expect((await h.send(e)).status).toBe(204)
    // One waiting for its next retry, one that used them all (no worker runs: the states are set as they would be).
    await h.rt.store.db.updateTable('webhook_events').set({ status: 'failed', attempts: 2, next_attempt_at: h.clock.now() + 60_000 }).where('event_id', '=', failed.event_id).execute()
    await h.rt.store.db.updateTable('webhook_events').set({ status: 'dead', attempts: 3 }).where('event_id', '=', dead.event_id).execute()
    // Replayed during the outage: the failed one is retried automatically later, as it would have been.
    expect(await replayEvent(h.rt, failed.event_id)).toMatchObject({ status: 'failed', attempts: 1, nextAttemptAt: expect.any(Number) })
    expect(await statusOf(h, failed.event_id)).toBe('failed')
    expect(await replayEvent(h.rt, dead.event_id)).toMatchObject({ status: 'dead', attempts: 1 })
    expect(await statusOf(h, dead.event_id)).toBe('dead')
    // Queued for the workers instead (`events replay`, "Replay all dead", a receiver-only replica): the same outcomes.
    await h.rt.store.db.updateTable('webhook_events').set({ status: 'failed', attempts: 2, next_attempt_at: h.clock.now() + 60_000 }).where('event_id', '=', failed.event_id).execute()
    for (const e of [failed, dead]) expect(await requeueEvent(h.rt, e.event_id)).toBe(true)
    const outcomes = await drainDue(h.rt)
    expect(outcomes.find((o) => o.eventId === failed.event_id)).toMatchObject({ status: 'failed', attempts: 1 })
    expect(outcomes.find((o) => o.eventId === dead.event_id)).toMatchObject({ status: 'dead', attempts: 3 })
  })

  it('a payload processing cannot understand is dead at once, without retries', async () => {
    h = await createHarness(dialect)
    stop = startWebhookWorkers(h.rt)
    await h.send({ event_id: 'evt_odd', event_type: 'call.transferred', data: { something: 1 } })
    await waitForStatus(h, 'evt_odd', 'dead')
    const row = await h.rt.store.db.selectFrom('webhook_events').selectAll().where('event_id', '=', 'evt_odd').executeTakeFirstOrThrow()
    expect(row.attempts).toBe(1)
    expect(row.last_error).toMatch(/not a call event/)
  })

  // The provider's production checklist: log trace_id, agent_id, conversation_id and the campaign.
  it('the lines about an event carry its trace id, agent, conversation and campaign: stored, duplicate, dead-lettered', async () => {
    h = await createHarness(dialect)
    const logs = captureLogs('info')
    h.rt.log = logs.log
    stop = startWebhookWorkers(h.rt)
    const event = makeEvent({ event_id: 'evt_logged', call: { agent_id: 103, call_parameters: { customer_phone: '+919876543210', campaign: 'spring-2026' } } })
    await h.send(event)
    await h.send(event)
    const fields = { event_id: 'evt_logged', agent_id: 103, campaign: 'spring-2026', conversation_id: event.data.call.conversation_id, trace_id: event.data.call.trace_id }
    expect(logs.find(/^webhook stored$/)).toEqual([expect.objectContaining(fields)])
    expect(logs.find(/^duplicate webhook acknowledged$/)).toEqual([expect.objectContaining(fields)])
    // One processing cannot read (no failure_reason): dead at once, and its line says whose it was.
    const odd = makeEvent({ event_id: 'evt_odd_logged', call: { agent_id: 103, call_parameters: { customer_phone: '+919876543210', campaign: 'spring-2026' } } }) as unknown as { data: { call: Record<string, unknown> } }
    delete odd.data.call.failure_reason
    await h.send(odd)
    await waitForStatus(h, 'evt_odd_logged', 'dead')
    expect(logs.find(/dead-lettered/)).toEqual([expect.objectContaining({ event_id: 'evt_odd_logged', agent_id: 103, campaign: 'spring-2026' })])
  })

  it('what the provider may send beyond the examples is processed: a provider-specific call.<status>, null members in retry_context and call_parameters', async () => {
    h = await createHarness(dialect)
    const seen: PipelineEvent[] = []
    h.rt.hooks.on('test', (e) => void seen.push(e))
    stop = startWebhookWorkers(h.rt)
    const odd = makeEvent({ event_type: 'call.voicemail' })
    const nulls = makeEvent({
      event_type: 'call.no_answer',
      call: { call_parameters: { customer_phone: '+919876543210', email: null } as unknown as Record<string, string> },
      data: { retry_context: { collected_data: null, retry_initial_message: 'Hello again', retry_language: null, retry_stage_id: null } as unknown as Record<string, string> },
    })
    for (const e of [odd, nulls]) expect((await h.send(e)).status).toBe(204)
    for (const e of [odd, nulls]) await waitForStatus(h, e.event_id, 'processed')
    expect(await getConversation(h.rt, odd.data.call.conversation_id)).toMatchObject({ status: 'voicemail', terminal: true })
    expect(await getConversation(h.rt, nulls.data.call.conversation_id)).toMatchObject({
      status: 'no_answer',
      call_parameters: { customer_phone: '+919876543210' },
      retry_context: { retry_initial_message: 'Hello again' },
    })
    expect(seen.map((e) => e.eventType).sort()).toEqual(['call.no_answer', 'call.voicemail'])
  })

  // conversations.contact_number is indexed, and Postgres refuses an index entry past ~2,700 bytes: the event failed
  // until it was dead, and the conversation's outcome never reached the read model.
  it('a to_phone longer than any phone number is processed: the conversation is stored without a contact number', async () => {
    h = await createHarness(dialect)
    const logs = captureLogs('warn')
    h.rt.log = logs.log
    stop = startWebhookWorkers(h.rt)
    // Random, so Postgres cannot compress the index entry under its limit.
    const long = makeEvent({ event_type: 'call.no_answer', call: { to_phone: `+${[...randomBytes(5_000)].map((b) => b % 10).join('')}` } })
    const next = makeEvent({ event_type: 'call.busy' })
    for (const e of [long, next]) expect((await h.send(e)).status).toBe(204)
    for (const e of [long, next]) await waitForStatus(h, e.event_id, 'processed')
    expect(await getConversation(h.rt, long.data.call.conversation_id)).toMatchObject({ status: 'no_answer', terminal: true, contact_number: null, from_phone: '+918035550101' })
    expect(await getConversation(h.rt, next.data.call.conversation_id)).toMatchObject({ status: 'busy', contact_number: '+919876543210' })
    expect(logs.find(/to_phone/)).toEqual([expect.objectContaining({ event_id: long.event_id, conversation_id: long.data.call.conversation_id, to_phone_length: 5_001 })])
  })

  // conversations.duration_seconds is an integer column on Postgres: 2^31 seconds failed the event until it was dead. A
  // start at the very end of Date's range made that day's report fail to build ("Invalid time value").
  it('a duration (below 0, past a day) or a time no conversation can have is kept as missing; the rest of the conversation is stored', async () => {
    h = await createHarness(dialect)
    stop = startWebhookWorkers(h.rt)
    const events = [
      makeEvent({ call: { duration_seconds: 2 ** 31 } }),
      makeEvent({ call: { duration_seconds: 1e308 } }),
      makeEvent({ call: { duration_seconds: -(2 ** 40) } }),
      makeEvent({ call: { started_at: '+275760-09-13T00:00:00Z', ended_at: '2026-03-01T09:58:42Z' } }),
      makeEvent({ call: { duration_seconds: 86_400, started_at: '9999-12-31T23:59:59Z' } }),
      // No call's length: below 0, or past a day (they were averaged into the report: `avg 16666625 min 00 s`).
      makeEvent({ call: { duration_seconds: -5000 } }),
      makeEvent({ call: { duration_seconds: 2_000_000_000 } }),
      makeEvent({ call: { duration_seconds: 86_401 } }),
      // A time without a zone is UTC, as the provider's are: it was read in the server's zone (TZ).
      makeEvent({ call: { started_at: '2026-03-01T09:58:00', ended_at: '2026-03-01T09:58:42.5' } }),
    ]
    for (const e of events) expect((await h.send(e)).status).toBe(204)
    for (const e of events) await waitForStatus(h, e.event_id, 'processed')
    const stored = await Promise.all(events.map((e) => getConversation(h.rt, e.data.call.conversation_id)))
    expect(stored.map((c) => [c?.status, c?.duration_seconds, c?.started_at])).toEqual([
      ['completed', null, Date.parse('2026-03-01T09:58:00Z')],
      ['completed', null, Date.parse('2026-03-01T09:58:00Z')],
      ['completed', null, Date.parse('2026-03-01T09:58:00Z')],
      ['completed', 42, null],
      ['completed', 86_400, Date.parse('9999-12-31T23:59:59Z')],
      ['completed', null, Date.parse('2026-03-01T09:58:00Z')],
      ['completed', null, Date.parse('2026-03-01T09:58:00Z')],
      ['completed', null, Date.parse('2026-03-01T09:58:00Z')],
      ['completed', 42, Date.UTC(2026, 2, 1, 9, 58)],
    ])
    expect(providerTimeMs('2026-03-01T09:58:42.5')).toBe(Date.UTC(2026, 2, 1, 9, 58, 42, 500))
    expect(providerTimeMs('2026-03-01T09:58:42+05:30')).toBe(Date.UTC(2026, 2, 1, 4, 28, 42))
    expect(providerTimeMs('yesterday')).toBeNaN()
  })

  // A follow-up placed but its answer lost (the resend answered duplicate_request) is in the ledger without a trace id:
  // nothing joined it to its conversation, so `calls list` showed no outcome and the report counted it `initiated` for ever.
  it('a follow-up whose answer was lost takes its trace id from its conversation; another contact\'s or a refused one does not', async () => {
    h = await createHarness(dialect)
    stop = startWebhookWorkers(h.rt)
    const ledger = (id: string, previous: string, phone: string, status = 'initiated') => ({
      id, tenant: 't_acme', agent_id: 101, customer_phone: phone, customer_key: contactKey(phone, 'IN'), idempotency_key: `idem_${id}`, trace_id: null,
      conversation_id: null, previous_conversation_id: previous, scheduled_for: null, parameters: '[]', retry_context: null, metadata: null,
      recipe: 'no-answer-followup', campaign: 'spring', status, error: null, created_at: 1, updated_at: 1,
    })
    await h.rt.store.db.insertInto('calls').values([
      ledger('lost', 'chain-a_1', '+919876543210'),
      // Refused: it placed nothing, whatever arrives.
      ledger('refused', 'chain-b_1', '+919876543211', 'rejected'),
      // Continues chain-c_1, but to another contact than the conversation that arrives.
      ledger('other', 'chain-c_1', '+919876543299'),
    ]).execute()
    const events = [
      makeEvent({ call: { conversation_id: 'chain-a_2', trace_id: 'T-a2', to_phone: '+919876543210' } }),
      makeEvent({ call: { conversation_id: 'chain-b_2', trace_id: 'T-b2', to_phone: '+919876543211' } }),
      makeEvent({ call: { conversation_id: 'chain-c_2', trace_id: 'T-c2', to_phone: '+919876543212' } }),
    ]
    for (const e of events) expect((await h.send(e)).status).toBe(204)
    for (const e of events) await waitForStatus(h, e.event_id, 'processed')
    const rows = await h.rt.store.db.selectFrom('calls').select(['id', 'trace_id']).orderBy('id').execute()
    expect(rows).toEqual([{ id: 'lost', trace_id: 'T-a2' }, { id: 'other', trace_id: null }, { id: 'refused', trace_id: null }])
  })

  it('a named target\'s events (a CRM on Standard Webhooks) are processed, not failed: the read model ignores them, consumers get them', async () => {
    const secret = `whsec_${Buffer.from('crm-secret-crm-secret-crm-secret').toString('base64')}`
    h = await createHarness(dialect, { WEBHOOK_TARGETS: JSON.stringify({ crm: { scheme: 'standard', secrets: secret } }) })
    const seen: PipelineEvent[] = []
    h.rt.hooks.consume('test', (batch) => void seen.push(...batch))
    stop = startWebhookWorkers(h.rt)
    const body = JSON.stringify({ type: 'contact.updated', event_type: 'contact.updated', data: { id: 'ct_1', phone: '+919876543210' } })
    const ts = Math.floor(h.clock.now() / 1000)
    const res = await h.post(body, { 'webhook-id': 'msg_crm_1', 'webhook-timestamp': String(ts), 'webhook-signature': signStandard('msg_crm_1', ts, body, secret) }, 'crm')
    expect(res.status).toBe(204)
    const provider = makeEvent()
    await h.send(provider)
    await waitForStatus(h, 'msg_crm_1', 'processed')
    await waitForStatus(h, provider.event_id, 'processed')
    expect(seen.find((e) => e.eventId === 'msg_crm_1')).toMatchObject({ kind: 'target', target: 'crm', eventType: 'contact.updated', body: { data: { id: 'ct_1' } } })
    expect(await listConversations(h.rt)).toHaveLength(1)
    expect((await webhookHealth(h.rt, 0, h.clock.now() + 1)).dead).toBe(0)
  })

  it('events left pending (no worker running, as after a crash) are processed when the worker starts', async () => {
    h = await createHarness(dialect)
    const events = Array.from({ length: 30 }, () => makeEvent())
    for (const e of events) await h.send(e)
    expect(await statusOf(h, events[0]!.event_id)).toBe('pending')
    stop = startWebhookWorkers(h.rt)
    await vi.waitFor(async () => {
      const n = await h.rt.store.db.selectFrom('webhook_events').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'processed').executeTakeFirstOrThrow()
      expect(Number(n.n)).toBe(30)
    }, { timeout: 10_000, interval: 20 })
    expect(await listConversations(h.rt, { limit: 100 })).toHaveLength(30)
  })

  it('a long drain leaves its thread a turn between batches (messages, a /metrics scrape, are not held until the end)', async () => {
    h = await createHarness(dialect)
    const at = h.clock.now()
    // Three whole batches of pending events, stored directly (as a backlog left by a burst).
    const rows = Array.from({ length: 600 }, (_, i) => pendingRow({ event_id: `evt_turn_${i}`, target: 'formant', event_type: 'call.completed', conversation_id: null, trace_id: null, agent_id: null, body: JSON.stringify(makeEvent()), headers: '{}', source: 'webhook' }, at))
    for (let i = 0; i < rows.length; i += 200) await h.rt.store.db.insertInto('webhook_events').values(rows.slice(i, i + 200)).execute()
    const done = async () => Number((await h.rt.store.db.selectFrom('webhook_events').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '!=', 'pending').executeTakeFirstOrThrow()).n)
    stop = startWebhookWorkers(h.rt)
    // What each turn of the event loop finds: on SQLite, without a turn between batches, the first one found all 600 done.
    const seen: number[] = []
    for (let turn = 0; turn < 10_000 && seen.at(-1) !== 600; turn++) {
      await nextTurn()
      seen.push(await done())
    }
    expect(seen.at(-1)).toBe(600)
    expect(seen.some((n) => n > 0 && n < 600)).toBe(true)
  })

  it('two replicas sharing the database process each event exactly once', async () => {
    h = await createHarness(dialect)
    const other = await createRuntime(h.rt.config, { store: h.rt.store, skipMigrate: true, clock: h.clock, log: createSilentLogger() })
    const counts = new Map<string, number>()
    const hook = (e: ProcessedEvent) => void counts.set(e.eventId, (counts.get(e.eventId) ?? 0) + 1)
    h.rt.hooks.on('count', hook)
    other.hooks.on('count', hook)
    const events = Array.from({ length: 60 }, () => makeEvent())
    for (const e of events) await h.send(e)
    const stopA = startWebhookWorkers(h.rt)
    const stopB = startWebhookWorkers(other)
    try {
      await vi.waitFor(() => expect(counts.size).toBe(60), { timeout: 10_000, interval: 20 })
      await h.clock.advance(5_000)
      expect([...counts.values()].every((n) => n === 1)).toBe(true)
    } finally {
      await stopA()
      await stopB()
    }
  })

  it('purge removes processed and dead events past retention, never pending ones or recent ones', async () => {
    h = await createHarness(dialect, { EVENT_RETENTION_DAYS: '30' })
    const old = makeEvent()
    const oldPending = makeEvent()
    await h.send(old)
    await h.send(oldPending)
    await h.rt.store.db.updateTable('webhook_events').set({ status: 'processed' }).where('event_id', '=', old.event_id).execute()
    await h.clock.advance(29 * 86_400_000)
    const recent = makeEvent()
    await h.send(recent)
    await h.rt.store.db.updateTable('webhook_events').set({ status: 'processed' }).where('event_id', '=', recent.event_id).execute()
    expect((await purgeOldEvents(h.rt)).events).toBe(0) // 29 days: everything kept
    await h.clock.advance(2 * 86_400_000)
    expect((await purgeOldEvents(h.rt)).events).toBe(1)
    const left = (await h.rt.store.db.selectFrom('webhook_events').select('event_id').execute()).map((r) => r.event_id).sort()
    expect(left).toEqual([oldPending.event_id, recent.event_id].sort())
  })

  // X-FormantAI-Timestamp is not signed: a captured delivery re-sent with a fresh header passes the tolerance, and
  // only its id catches it — until the purge forgets the id. The body's signed creation time covers the rest.
  it('a captured delivery re-sent after the purge forgot its id is refused (401 stale_event); an old sample on a fresh install is not', async () => {
    h = await createHarness(dialect)
    // Nothing purged yet: an event created long ago (the README's sample) is taken as it comes.
    const sample = makeEvent({ timestamp: new Date(Date.parse(START) - 90 * 86_400_000).toISOString() })
    expect((await h.send(sample)).status).toBe(204)
    const captured = makeEvent({ timestamp: new Date(h.clock.now() - 60_000).toISOString() })
    expect((await h.send(captured)).status).toBe(204)
    await h.rt.store.db.updateTable('webhook_events').set({ status: 'processed' }).execute()
    expect((await h.send(captured)).headers.get('x-switchboard-duplicate')).toBe('true')
    await h.clock.advance(31 * 86_400_000)
    expect((await purgeOldEvents(h.rt)).events).toBe(2)
    const replay = await h.send(captured)
    expect(replay.status).toBe(401)
    expect(await replay.json()).toMatchObject({ error: { type: 'authentication_error', message: expect.stringMatching(/^event created .*, before the oldest events still kept \(EVENT_RETENTION_DAYS, 30 days\): a re-sent old delivery$/) } })
    expect(await countEvents(h.rt)).toBe(0)
    expect(await h.rt.metrics.metrics()).toMatch(/switchboard_webhooks_rejected_total\{target="formant",reason="stale_event"\} 1/)
    // New events, and ones created inside the window, are taken as before.
    expect((await h.send(makeEvent({ timestamp: new Date(h.clock.now() - 60_000).toISOString() }))).status).toBe(204)
    expect((await h.send(makeEvent({ timestamp: new Date(h.clock.now() - 28 * 86_400_000).toISOString() }))).status).toBe(204)
  })

  it('purge deletes in chunks, each its own statement, until nothing past the window is left', async () => {
    h = await createHarness(dialect)
    const old = Array.from({ length: 7 }, () => makeEvent())
    for (const e of old) await h.send(e)
    await h.rt.store.db.updateTable('webhook_events').set({ status: 'processed' }).execute()
    await h.rt.store.db.updateTable('webhook_events').set({ status: 'dead' }).where('event_id', '=', old[0]!.event_id).execute()
    const pending = makeEvent()
    await h.send(pending)
    await h.clock.advance(31 * 86_400_000)
    // Chunks of 2: three full ones and a last one of 1 (a chunk short of its limit ends the run).
    expect(await purgeOldEvents(h.rt, { chunk: 2 })).toEqual({ events: 7, rejections: 0, skipped: false })
    expect((await h.rt.store.db.selectFrom('webhook_events').select('event_id').execute()).map((r) => r.event_id)).toEqual([pending.event_id])
    expect(await purgeOldEvents(h.rt, { chunk: 2 })).toEqual({ events: 0, rejections: 0, skipped: false })
    const metrics = await h.rt.metrics.metrics()
    expect(metrics).toContain('switchboard_retention_purged_rows_total{table="webhook_events"} 7')
    expect(metrics).toContain('switchboard_retention_purge_behind{purge="webhooks"} 0')
    // A run that reaches its time limit with rows left says so (the next run goes on). An event created now: one
    // created before what the purge has forgotten is refused as a re-sent old delivery.
    await h.send(makeEvent({ timestamp: new Date(h.clock.now()).toISOString() }))
    await h.rt.store.db.updateTable('webhook_events').set({ status: 'processed' }).execute()
    await h.clock.advance(31 * 86_400_000)
    expect(await purgeOldEvents(h.rt, { now: () => 1, deadline: 0 })).toEqual({ events: 0, rejections: 0, skipped: false })
    expect(await h.rt.metrics.metrics()).toContain('switchboard_retention_purge_behind{purge="webhooks"} 1')
  })

  it('reconciliation runs on one replica at a time (lease)', async () => {
    h = await createHarness(dialect)
    expect(await acquireLease(h.rt, 'webhooks:reconcile', 60_000, 'other-replica')).toBe(true)
    // Held by another replica: skipped without calling upstream (there is no upstream in this test).
    expect(await reconcile(h.rt)).toMatchObject({ skipped: true, pages: 0 })
    expect(await acquireLease(h.rt, 'webhooks:reconcile', 60_000)).toBe(false)
    await h.clock.advance(61_000)
    // Lapsed (the other replica died): this one takes it over, and then the other cannot.
    expect(await acquireLease(h.rt, 'webhooks:reconcile', 60_000)).toBe(true)
    expect(await acquireLease(h.rt, 'webhooks:reconcile', 60_000, 'other-replica')).toBe(false)
  })

  it('a reconciliation that outlasts its lease (a slow provider) stops once another replica has taken it', async () => {
    // A provider whose every answer comes after the lease has lapsed: the manual clock moves 11 minutes a detail.
    let details = 0
    const upstream = new H3()
      .get('/v1/conversations', () => ({
        data: ['a', 'b', 'c'].map((c) => ({ agent_id: 101, contact_number: '+919876543210', conversation_id: `conv-slow-${c}_1`, duration_seconds: 5, start_timestamp: Date.parse(START) - 3_600_000, end_timestamp: Date.parse(START) - 3_000_000, status: 'completed' })),
        has_more: false,
        total: 3,
      }))
      .get('/v1/conversations/:id', async (event) => {
        details++
        await h.clock.advance(11 * 60_000)
        // Meanwhile another replica's periodic run found the lease lapsed and took it.
        if (details === 1) expect(await acquireLease(h.rt, 'webhooks:reconcile', 10 * 60_000, 'other-replica')).toBe(true)
        const id = event.context.params!.id!
        return { data: { agent_id: 101, contact_number: '+919876543210', conversation_id: id, duration_seconds: 5, failure_reason: null, results: {}, status: 'completed', trace_id: `trace-${id}` } }
      })
    const server = serve(upstream, { port: 0, hostname: '127.0.0.1', silent: true })
    await server.ready()
    try {
      h = await createHarness(dialect, { VOICE_API_BASE_URL: server.url!, VOICE_API_KEY: 'sk_test_slow' })
      const result = await reconcile(h.rt)
      // The first conversation was fetched and queued; the run then found the lease taken and stopped.
      expect(result).toMatchObject({ skipped: false, fetched: 1, synthesized: 1, lostLease: true })
      expect(details).toBe(1)
      // The other replica's lease is left alone (the run releases only its own).
      expect(await acquireLease(h.rt, 'webhooks:reconcile', 10 * 60_000)).toBe(false)
    } finally {
      await server.close(true)
    }
  })

  // One conversation the provider lists but will not give (a 404) ended every run, before it reached any older one; a
  // conversation older than the events kept was queued and run by recipes (and came back once its event was purged);
  // the oldest past the pages a run reads were left without a word.
  it('a reconciliation skips and names a conversation the provider will not give, leaves the ones older than the events kept, and says when there were more pages', async () => {
    const ended = Date.parse(START) - 3_000_000
    const item = (id: string, end: number) => ({ agent_id: 101, contact_number: '+919876543210', conversation_id: id, duration_seconds: 5, start_timestamp: end - 60_000, end_timestamp: end, status: 'no_answer' })
    const listed = [item('conv-a_1', ended), item('conv-gone_1', ended), item('conv-b_1', ended), item('conv-ancient_1', ended - 40 * 86_400_000)]
    const upstream = new H3()
      .get('/v1/conversations', (event) => {
        const offset = Number(new URL(event.req.url).searchParams.get('offset') ?? 0)
        return { data: offset === 0 ? listed : [], has_more: true, total: 1_000 }
      })
      .get('/v1/conversations/:id', (event) => {
        const found = listed.find((c) => c.conversation_id === event.context.params!.id)!
        if (found.conversation_id === 'conv-gone_1') return new Response(JSON.stringify({ error: { message: 'conversation not found', type: 'not_found' } }), { status: 404, headers: { 'content-type': 'application/json' } })
        return { data: { ...found, failure_reason: null, results: {}, trace_id: `trace-${found.conversation_id}` } }
      })
    const server = serve(upstream, { port: 0, hostname: '127.0.0.1', silent: true })
    await server.ready()
    try {
      h = await createHarness(dialect, { VOICE_API_BASE_URL: server.url!, VOICE_API_KEY: 'sk_test_skips' })
      const result = await reconcile(h.rt, { graceMs: 0, maxPages: 1 })
      expect(result).toMatchObject({
        synthesized: 2,
        eventIds: ['reconcile:conv-a_1:no_answer', 'reconcile:conv-b_1:no_answer'],
        unreadable: [{ conversationId: 'conv-gone_1', error: '404 not_found: conversation not found' }],
        tooOld: 1,
        more: true,
      })
      // And again: the unreadable one is skipped again, the rest is done.
      expect(await reconcile(h.rt, { graceMs: 0, maxPages: 1 })).toMatchObject({ synthesized: 0, unreadable: [{ conversationId: 'conv-gone_1' }] })
    } finally {
      await server.close(true)
    }
  })

  // The provider's conversation has no retry block: an attempt reconciled while the platform's next one was still under
  // way read as the final one, and the follow-up recipe planned a call beside it — past the agent's attempt limit.
  it('a reconciliation leaves a platform attempt for later while a later attempt of its chain has not settled', async () => {
    const now = Date.parse(START)
    const item = (id: string, status: string, end: number | null) => ({ agent_id: 103, contact_number: '+919822200016', conversation_id: id, duration_seconds: 5, start_timestamp: (end ?? now) - 60_000, end_timestamp: end ?? 0, status })
    let listed = [item('conv-chain_3', 'in_progress', null), item('conv-chain_2', 'busy', now - 7 * 60_000), item('conv-chain_1', 'busy', now - 10 * 60_000), item('conv-alone_1', 'busy', now - 10 * 60_000)]
    const upstream = new H3()
      .get('/v1/conversations', () => ({ data: listed, has_more: false, total: listed.length }))
      .get('/v1/conversations/:id', (event) => {
        const found = listed.find((c) => c.conversation_id === event.context.params!.id)!
        return { data: { ...found, failure_reason: null, results: {}, trace_id: 'trace-chain' } }
      })
    const server = serve(upstream, { port: 0, hostname: '127.0.0.1', silent: true })
    await server.ready()
    try {
      h = await createHarness(dialect, { VOICE_API_BASE_URL: server.url!, VOICE_API_KEY: 'sk_test_chain' })
      expect((await reconcile(h.rt)).eventIds).toEqual(['reconcile:conv-alone_1:busy'])
      // The last attempt ends, and passes the grace: the whole chain goes together.
      listed = [item('conv-chain_3', 'busy', now - 7 * 60_000), ...listed.slice(1)]
      expect((await reconcile(h.rt)).eventIds).toEqual(['reconcile:conv-chain_3:busy', 'reconcile:conv-chain_2:busy', 'reconcile:conv-chain_1:busy'])
    } finally {
      await server.close(true)
    }
  })

  // Stored under its own id, a webhook the provider retried (or someone re-sent) after reconciliation had queued the same
  // outcome ran every recipe and destination a second time.
  it('a webhook bringing an outcome reconciliation already queued is stored and read, but its consumers do not run again', async () => {
    const ended = Date.parse(START) - 3_600_000
    const listed = [{ agent_id: 101, contact_number: '+919876543210', conversation_id: 'conv-late_1', duration_seconds: 0, start_timestamp: ended - 60_000, end_timestamp: ended, status: 'no_answer' }]
    const upstream = new H3()
      .get('/v1/conversations', () => ({ data: listed, has_more: false, total: 1 }))
      .get('/v1/conversations/:id', () => ({ data: { ...listed[0], failure_reason: 'no_answer', results: {}, trace_id: 'trace-late' } }))
    const server = serve(upstream, { port: 0, hostname: '127.0.0.1', silent: true })
    await server.ready()
    try {
      h = await createHarness(dialect, { VOICE_API_BASE_URL: server.url!, VOICE_API_KEY: 'sk_test_late' })
      const seen: string[] = []
      h.rt.hooks.on('test', (e) => void seen.push(e.eventId))
      expect(await reconcile(h.rt)).toMatchObject({ synthesized: 1 })
      await drainDue(h.rt)
      expect(seen).toEqual(['reconcile:conv-late_1:no_answer'])
      const late = makeEvent({ event_type: 'call.no_answer', timestamp: '2026-03-01T09:59:00Z', call: { conversation_id: 'conv-late_1', ended_at: new Date(ended).toISOString(), trace_id: 'trace-late' } })
      expect((await h.send(late)).status).toBe(204)
      // A live outcome of another conversation in the same batch runs as ever.
      const fresh = makeEvent({ event_type: 'call.no_answer' })
      expect((await h.send(fresh)).status).toBe(204)
      expect((await drainDue(h.rt)).map((o) => [o.eventId, o.status]).sort()).toEqual([[fresh.event_id, 'processed'], [late.event_id, 'processed']].sort())
      expect(seen).toEqual(['reconcile:conv-late_1:no_answer', fresh.event_id])
    } finally {
      await server.close(true)
    }
  })

  // The provider's conversation carries neither the call's parameters nor its retry context: a reconciled conversation
  // had none, so its follow-up went out with the number alone (no name, no collected data) under `agent:101`, and the
  // report filed the call under `(direct)`. Switchboard's calls ledger has them for the calls it placed.
  it("a reconciled conversation carries the parameters and retry context switchboard placed its call with (by trace id; an untraced call by number and agent)", async () => {
    const ended = Date.parse(START) - 3_000_000
    const item = (id: string, contact: string) => ({ agent_id: 101, contact_number: contact, conversation_id: id, duration_seconds: 5, start_timestamp: ended - 60_000, end_timestamp: ended, status: 'no_answer' })
    const listed = [item('conv-traced_1', '+919876543210'), item('conv-untraced_1', '+919876543211'), item('conv-batch_1', '+919876543212'), item('conv-garbled_1', '+919876543213')]
    const upstream = new H3()
      .get('/v1/conversations', () => ({ data: listed, has_more: false, total: listed.length }))
      .get('/v1/conversations/:id', (event) => {
        const found = listed.find((c) => c.conversation_id === event.context.params!.id)!
        return { data: { ...found, failure_reason: null, results: {}, trace_id: `trace-${found.conversation_id}` } }
      })
    const server = serve(upstream, { port: 0, hostname: '127.0.0.1', silent: true })
    await server.ready()
    try {
      h = await createHarness(dialect, { VOICE_API_BASE_URL: server.url!, VOICE_API_KEY: 'sk_test_ledger', DEFAULT_COUNTRY: 'IN' })
      const call = (id: string, phone: string, traceId: string | null, at: number, parameters: Array<{ name: string; value: string }>, retryContext: object | null) => ({
        // Its contact key as the ledger writes it (src/campaigns/contact-key.ts).
        id, tenant: 't', agent_id: 101, customer_phone: phone, customer_key: contactKey(phone, 'IN'), idempotency_key: `key_${id}`, trace_id: traceId, conversation_id: null,
        previous_conversation_id: null, scheduled_for: null, parameters: JSON.stringify(parameters), retry_context: retryContext && JSON.stringify(retryContext), metadata: null,
        recipe: null, campaign: null, status: 'initiated', error: null, created_at: at, updated_at: at,
      })
      await h.rt.store.db.insertInto('calls').values([
        call('call_traced', '+919876543210', 'trace-conv-traced_1', ended - 120_000, [{ name: 'customer_phone', value: '+919876543210' }, { name: 'name', value: 'Asha' }, { name: 'campaign', value: 'spring' }], { collected_data: { city: 'Pune' } }),
        // Its answer was lost (no trace id): the same contact, written another way, by the same agent, just before.
        call('call_untraced', '098765 43211', null, ended - 90_000, [{ name: 'customer_phone', value: '098765 43211' }, { name: 'name', value: 'Ravi' }], null),
        // An untraced call to the same number a week earlier is not this conversation's.
        call('call_old', '+919876543211', null, ended - 7 * 86_400_000, [{ name: 'name', value: 'Old' }], null),
        // A ledger row whose JSON does not parse fails nothing: the conversation is reconciled without it.
        { ...call('call_garbled', '+919876543213', 'trace-conv-garbled_1', ended - 120_000, [], null), parameters: '[{"name":', retry_context: '{' },
      ]).execute()
      expect(await reconcile(h.rt, { graceMs: 0 })).toMatchObject({ synthesized: 4 })
      await drainDue(h.rt)
      const shown = async (id: string) => {
        const conv = await getConversation(h!.rt, id)
        return [conv?.source, conv?.call_parameters, conv?.retry_context]
      }
      expect(await shown('conv-traced_1')).toEqual(['reconcile', { customer_phone: '+919876543210', name: 'Asha', campaign: 'spring' }, { collected_data: { city: 'Pune' } }])
      expect(await shown('conv-untraced_1')).toEqual(['reconcile', { customer_phone: '098765 43211', name: 'Ravi' }, null])
      // Not placed by switchboard (a batch row): nothing to add.
      expect(await shown('conv-batch_1')).toEqual(['reconcile', null, null])
      expect(await shown('conv-garbled_1')).toEqual(['reconcile', null, null])
    } finally {
      await server.close(true)
    }
  })

  it('stopping the workers during a reconciliation run ends it after the request under way, lease released', async () => {
    // A provider that holds its answer until the test lets it go; its list would go on for 50 pages.
    let pages = 0
    let release = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    const upstream = new H3().get('/v1/conversations', async () => {
      pages++
      await held
      return { data: [], has_more: true, total: 5000 }
    })
    const server = serve(upstream, { port: 0, hostname: '127.0.0.1', silent: true })
    await server.ready()
    try {
      h = await createHarness(dialect, { VOICE_API_BASE_URL: server.url!, VOICE_API_KEY: 'sk_test_slow', RECONCILE_INTERVAL_SECONDS: '60' })
      const stop = startWebhookWorkers(h.rt)
      await h.clock.advance(10_000) // the first run is due 10 s after start
      await vi.waitFor(() => expect(pages).toBe(1))
      let stopped = false
      const stopping = stop().then(() => (stopped = true))
      await vi.waitFor(() => expect(stopped).toBe(true), { timeout: 5_000 })
      await stopping
      expect(pages).toBe(1)
      // Its lease is free for the next run, here or on another replica.
      expect(await acquireLease(h.rt, 'webhooks:reconcile', 60_000, 'other-replica')).toBe(true)
    } finally {
      release()
      await server.close(true)
    }
  })

  describe('admin and CLI', () => {
    it('lists, filters and shows events over HTTP, with the ADMIN_TOKEN rules', async () => {
      h = await createHarness(dialect, { ADMIN_TOKEN: 'a-long-admin-token-123' })
      const a = makeEvent()
      const b = makeEvent({ event_type: 'call.busy' })
      await h.send(a)
      await h.clock.advance(1000)
      await h.send(b)
      const get = (path: string, token?: string) =>
        h.app.fetch(new Request(`http://localhost${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} }))
      expect((await get('/admin/events')).status).toBe(401)
      expect((await get('/admin/events', 'wrong-token-wrong-token')).status).toBe(401)
      const all = (await (await get('/admin/events', 'a-long-admin-token-123')).json()) as { data: Array<{ event_id: string }> }
      expect(all.data.map((e) => e.event_id)).toEqual([b.event_id, a.event_id])
      const busy = (await (await get('/admin/events?type=call.busy&status=pending', 'a-long-admin-token-123')).json()) as { data: Array<{ event_id: string }> }
      expect(busy.data.map((e) => e.event_id)).toEqual([b.event_id])
      expect((await get('/admin/events?status=weird', 'a-long-admin-token-123')).status).toBe(400)
      const one = (await (await get(`/admin/events/${a.event_id}`, 'a-long-admin-token-123')).json()) as { data: { body: { event_id: string }; headers: Record<string, string> } }
      expect(one.data.body.event_id).toBe(a.event_id)
      expect(Object.keys(one.data.headers)).not.toContain('x-formantai-signature')
      expect((await get('/admin/events/evt_missing', 'a-long-admin-token-123')).status).toBe(404)
      expect((await h.app.fetch(new Request('http://localhost/admin/events/evt_missing/replay', { method: 'POST', headers: { authorization: 'Bearer a-long-admin-token-123' } }))).status).toBe(404)
    })

    it('events list/show with --json, and clear errors', async () => {
      h = await createHarness(dialect)
      // Nothing stored yet: the listing names the database it read (another DATA_DIR than the service's is the usual cause).
      const empty = await runCli(['events', 'list'], cliEnv(h.rt))
      expect(empty.out.split('\n')).toEqual(['(none)', expect.stringMatching(/^no events stored in (sqlite|postgres):.*; if the service runs with another DATA_DIR or DATABASE_URL, give this command the same$/), ''])
      expect((await runCli(['events', 'list', '--status', 'dead'], cliEnv(h.rt))).out).toBe('(none)\n')
      const a = makeEvent()
      const b = makeEvent({ event_type: 'call.no_answer' })
      await h.send(a)
      await h.send(b)
      const env = cliEnv(h.rt)
      const list = await runCli(['events', 'list', '--json'], env)
      expect(list.err.slice(0, 400)).toBe('')
      expect(list.code).toBe(0)
      expect((JSON.parse(list.out) as Array<{ event_id: string }>).map((e) => e.event_id).sort()).toEqual([a.event_id, b.event_id].sort())
      const filtered = await runCli(['events', 'list', '--type', 'call.no_answer', '--status', 'pending', '--limit', '5', '--json'], env)
      expect((JSON.parse(filtered.out) as Array<{ event_id: string }>).map((e) => e.event_id)).toEqual([b.event_id])
      const table = await runCli(['events', 'list'], env)
      expect(table.out).toContain(a.event_id)
      const show = await runCli(['events', 'show', a.event_id, '--json'], env)
      expect((JSON.parse(show.out) as { body: { data: { call: { conversation_id: string } } } }).body.data.call.conversation_id).toBe(a.data.call.conversation_id)
      const bad = await runCli(['events', 'list', '--status', 'weird'], env)
      expect(bad.code).toBe(2)
      expect(bad.err).toMatch(/^error: --status must be one of/)
      expect(bad.err).not.toContain('    at ')
      // An unknown id is a user mistake: exit 2, like every other mistake.
      const missing = await runCli(['events', 'show', 'evt_nope'], env)
      expect(missing.code).toBe(2)
      expect(missing.err).toMatch(/no webhook event with id "evt_nope"/)
      const replayMissing = await runCli(['events', 'replay', 'evt_nope'], env)
      expect(replayMissing.code).toBe(2)
    })
  })
})

describe('reconciliation events', () => {
  it('a provider-specific status is reconciled as its own call.<status>, like its webhook; one that is no type name as call.failed', () => {
    const item = { agent_id: 1, contact_number: '+919876543210', conversation_id: 'c1', duration_seconds: 0, start_timestamp: 1_000, end_timestamp: 2_000, status: 'voicemail' }
    const detail = { agent_id: 1, contact_number: '+919876543210', conversation_id: 'c1', duration_seconds: 0, failure_reason: null, results: {}, status: 'voicemail', trace_id: 't1' }
    expect(synthesizeEvent(item, detail, 3_000)).toMatchObject({ event_id: 'reconcile:c1:voicemail', event_type: 'call.voicemail', data: { call: { status: 'voicemail' } } })
    expect(synthesizeEvent({ ...item, status: 'Left Message' }, { ...detail, status: 'Left Message' }, 3_000)).toMatchObject({ event_type: 'call.failed', data: { call: { status: 'Left Message' } } })
  })
})
