import { afterEach, expect, it } from 'vitest'
import { main } from '../../src/cli.ts'
import { enqueueEventFires } from '../../src/recipes/claims.ts'
import { pendingRow } from '../../src/webhooks/inbox.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { makeEvent } from './helpers.ts'
import { createManualClock } from '../../src/utils/clock.ts'

/** What `events show` and `events replay` tell: each recipe's part in an event; whether a service is up to process a replay. */
let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})

it('events show lists each recipe that took the event: ran (its run), waiting for a retry, or gave up', async () => {
  rt = await createTestRuntime()
  const event = makeEvent({ event_type: 'call.no_answer' })
  await rt.store.db.insertInto('webhook_events').values(pendingRow({
    event_id: event.event_id, target: 'formant', event_type: event.event_type, conversation_id: null, trace_id: null, agent_id: null, body: JSON.stringify(event), headers: '{}', source: 'webhook',
  }, rt.clock.now())).execute()
  await enqueueEventFires(rt, ['crm-sync', 'follow-up', 'slack'].map((recipe) => ({ recipe, eventId: event.event_id })))
  await rt.store.db.updateTable('recipe_event_fires').set({ status: 'done', attempts: 1, run_id: 'run_1' }).where('recipe', '=', 'follow-up').execute()
  await rt.store.db.updateTable('recipe_event_fires').set({ status: 'dead', attempts: 8, last_error: 'CRM answered 503\u001b]0;pwned\u0007' }).where('recipe', '=', 'crm-sync').execute()
  const env = { DATA_DIR: rt.dataDir, DATABASE_URL: rt.store.url, WEBHOOK_SECRET: 'whsec_test_secret', LOG_LEVEL: 'silent' }
  let text = ''
  let err = ''
  expect(await main(['events', 'show', event.event_id], { env, stdout: (t) => void (text += t), stderr: (t) => void (err += t) }), err).toBe(0)
  // What a recipe's error quotes cannot steer the terminal.
  expect(text).toContain('recipe crm-sync  gave up after 8 attempt(s): CRM answered 503\\x1b]0;pwned\\x07\n')
  expect(text).toContain('recipe follow-up ran (run run_1)\n')
  expect(text).toContain('recipe slack     waiting to run\n')
  let json = ''
  expect(await main(['events', 'show', event.event_id, '--json'], { env, stdout: (t) => void (json += t), stderr: () => {} })).toBe(0)
  expect((JSON.parse(json) as { recipes: unknown[] }).recipes).toEqual([
    { recipe: 'crm-sync', status: 'dead', attempts: 8, run_id: null, error: 'CRM answered 503\u001b]0;pwned\u0007' },
    { recipe: 'follow-up', status: 'done', attempts: 1, run_id: 'run_1', error: null },
    { recipe: 'slack', status: 'pending', attempts: 0, run_id: null, error: null },
  ])
})

it('events replay not picked up in time says the service is up when it is, rather than asking whether it runs', async () => {
  const clock = createManualClock('2026-03-01T10:00:00Z')
  rt = await createTestRuntime({ clock })
  const event = makeEvent({ event_type: 'call.completed' })
  await rt.store.db.insertInto('webhook_events').values(pendingRow({
    event_id: event.event_id, target: 'formant', event_type: event.event_type, conversation_id: null, trace_id: null, agent_id: null, body: JSON.stringify(event), headers: '{}', source: 'webhook',
  }, clock.now())).execute()
  const env = { DATA_DIR: rt.dataDir, DATABASE_URL: rt.store.url, WEBHOOK_SECRET: 'whsec_test_secret', LOG_LEVEL: 'silent' }
  const replay = async () => {
    let out = ''
    let done = false
    const code = main(['events', 'replay', event.event_id, '--wait', '2'], { env, overrides: { clock }, stdout: (t) => void (out += t), stderr: () => {} }).finally(() => (done = true))
    while (!done) await clock.advance(200)
    return { code: await code, out }
  }
  // No service registered: the question stands.
  expect(await replay()).toEqual({ code: 0, out: `${event.event_id}: queued; the running service processes it (none picked it up within 2 s — is switchboard running?)\n` })
  // A service is up (its runtimes register while they run): its workers are busy or restarting.
  await rt.store.db.insertInto('instances').values({ id: 'serve-1', process: 'up', host: 'here', started_at: clock.now() }).execute()
  expect((await replay()).out).toBe(`${event.event_id}: queued; the running service processes it (not picked up within 2 s: the service is up — its workers are busy with a backlog, or its processing is restarting; /readyz says which)\n`)
})

it('events show writes what a webhook carried with nothing that steers the terminal: ids, type, headers and body', async () => {
  rt = await createTestRuntime()
  const event = makeEvent({ event_type: 'call.completed' })
  const body = { ...event, note: 'C1 CSI \u009b31m, DEL \u007f, line separator \u2028, ESC \u001b]0;pwned\u0007' }
  await rt.store.db.insertInto('webhook_events').values(pendingRow({
    event_id: event.event_id, target: 'formant', event_type: event.event_type, conversation_id: 'conv_\u001b[2J', trace_id: 'trace_\u009b2J', agent_id: null, body: JSON.stringify(body), headers: JSON.stringify({ 'user-agent': 'probe\u009b1m' }), source: 'webhook',
  }, rt.clock.now())).execute()
  await rt.store.db.updateTable('webhook_events').set({ status: 'dead', attempts: 8, last_error: 'bad \u001b[31mred' }).where('event_id', '=', event.event_id).execute()
  const env = { DATA_DIR: rt.dataDir, DATABASE_URL: rt.store.url, WEBHOOK_SECRET: 'whsec_test_secret', LOG_LEVEL: 'silent' }
  let text = ''
  expect(await main(['events', 'show', event.event_id], { env, stdout: (t) => void (text += t), stderr: () => {} })).toBe(0)
  expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/)
  expect(text).toContain('conv_\\x1b[2J')
  expect(text).toContain('trace_\\x9b2J')
  expect(text).toContain('bad \\x1b[31mred')
  expect(text).toContain('"user-agent":"probe\\u009b1m"')
  // The body is still JSON that reads back as what was stored.
  const shown = text.slice(text.indexOf('body\n') + 5)
  expect(JSON.parse(shown)).toEqual(body)
})

it('events replay of a dead event that fails again says the replay failed, not "dead after 8 attempts" as if it made eight', async () => {
  const clock = createManualClock('2026-03-01T10:00:00Z')
  rt = await createTestRuntime({ clock })
  const event = makeEvent({ event_type: 'call.completed' })
  await rt.store.db.insertInto('webhook_events').values(pendingRow({
    event_id: event.event_id, target: 'formant', event_type: event.event_type, conversation_id: null, trace_id: null, agent_id: null, body: JSON.stringify(event), headers: '{}', source: 'webhook',
  }, clock.now())).execute()
  await rt.store.db.updateTable('webhook_events').set({ status: 'dead', attempts: 8, last_error: 'first failure' }).where('event_id', '=', event.event_id).execute()
  const env = { DATA_DIR: rt.dataDir, DATABASE_URL: rt.store.url, WEBHOOK_SECRET: 'whsec_test_secret', LOG_LEVEL: 'silent' }
  const db = rt.store.db
  let out = ''
  let done = false
  const code = main(['events', 'replay', event.event_id, '--wait', '5'], { env, overrides: { clock }, stdout: (t) => void (out += t), stderr: () => {} }).finally(() => (done = true))
  // The running service takes it (one attempt left) and it fails again.
  let failed = false
  while (!done) {
    await clock.advance(200)
    const row = await db.selectFrom('webhook_events').select(['status', 'attempts']).where('event_id', '=', event.event_id).executeTakeFirstOrThrow()
    if (!failed && row.status === 'pending') {
      expect(row.attempts).toBe(7)
      await db.updateTable('webhook_events').set({ status: 'dead', attempts: 8, last_error: 'CRM answered 503' }).where('event_id', '=', event.event_id).execute()
      failed = true
    }
  }
  expect(await code).toBe(1)
  expect(out).toBe(`${event.event_id}: dead again — the replay's attempt failed: CRM answered 503\n`)
})

it('--json output escapes the C1 controls and line separators a webhook carried, and reads back as the same values', async () => {
  rt = await createTestRuntime()
  const event = makeEvent({ event_type: 'call.completed' })
  const body = { ...event, note: 'C1 CSI \u009b31m and \u2028' }
  await rt.store.db.insertInto('webhook_events').values(pendingRow({
    event_id: event.event_id, target: 'formant', event_type: event.event_type, conversation_id: 'conv_\u009b2J', trace_id: null, agent_id: null, body: JSON.stringify(body), headers: '{}', source: 'webhook',
  }, rt.clock.now())).execute()
  const env = { DATA_DIR: rt.dataDir, DATABASE_URL: rt.store.url, WEBHOOK_SECRET: 'whsec_test_secret', LOG_LEVEL: 'silent' }
  let json = ''
  expect(await main(['events', 'show', event.event_id, '--json'], { env, stdout: (t) => void (json += t), stderr: () => {} })).toBe(0)
  expect(json).not.toMatch(/[\u007f-\u009f\u2028\u2029]/)
  const shown = JSON.parse(json) as { conversation_id: string; body: unknown }
  expect(shown.conversation_id).toBe('conv_\u009b2J')
  expect(shown.body).toEqual(body)
})
