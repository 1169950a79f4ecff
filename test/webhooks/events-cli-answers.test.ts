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
