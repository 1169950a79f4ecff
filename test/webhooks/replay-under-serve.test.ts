import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it, vi } from 'vitest'
import type { Runtime } from '../../src/runtime.ts'
import { startServer, type RunningServer } from '../../src/server.ts'
import { useServeInProcess } from '../helpers/serve-in-process.ts'
import { tempRecipesDir } from '../recipes/helpers.ts'
import { makeEvent } from './helpers.ts'

const serve = useServeInProcess('replay-serve')
let folder: ReturnType<typeof tempRecipesDir> | undefined
afterEach(() => {
  folder?.cleanup()
  folder = undefined
})

const TOKEN = 'replay-under-serve-admin-token'

/** An event that went dead before any recipe saw it (a read-model failure, say), stored as the inbox keeps it. */
async function storeDeadEvent(rt: Runtime, event: ReturnType<typeof makeEvent>): Promise<void> {
  const now = Date.now()
  await rt.store.db
    .insertInto('webhook_events')
    .values({
      event_id: event.event_id, target: 'formant', event_type: event.event_type, conversation_id: event.data.call.conversation_id, trace_id: event.data.call.trace_id,
      agent_id: event.data.call.agent_id, body: JSON.stringify(event), headers: '{}', source: 'webhook', received_at: now, status: 'dead', attempts: 5,
      next_attempt_at: now, claimed_by: null, claimed_until: null, last_error: 'read model: database is locked', processed_at: null,
    })
    .execute()
}

// Under `serve` the request is answered by the receiver's thread, which registers no recipes step: a replay run
// there marked the event processed and no recipe ever saw it.
it('an event replayed from /admin under serve reaches the recipes that subscribe to it', async () => {
  folder = tempRecipesDir()
  folder.write('followups', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'counts', on: ['call.no_answer'], run: (ctx) => ctx.trigger.events?.length ?? 0 })
`)
  const server = await serve.start({ RECIPES_DIR: folder.dir, ADMIN_TOKEN: TOKEN })
  const event = makeEvent({ event_type: 'call.no_answer' })
  await storeDeadEvent(server.rt, event)
  const replay = await fetch(`${server.url}/admin/events/${event.event_id}/replay`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } })
  expect(replay.status).toBe(200)
  expect((await replay.json()).data).toEqual({ event_id: event.event_id, status: 'processed', attempts: expect.any(Number) })
  const fires = await server.rt.store.db.selectFrom('recipe_event_fires').select(['recipe', 'event_id']).execute()
  expect(fires).toEqual([{ recipe: 'followups', event_id: event.event_id }])
  await vi.waitFor(async () => {
    const runs = await server.rt.store.db.selectFrom('recipe_runs').select(['recipe', 'status', 'summary']).execute()
    expect(runs).toEqual([expect.objectContaining({ recipe: 'followups', status: 'succeeded' })])
    // The run waits for the recipe's type check (a TypeScript compile): beside other work on two cores, over 20 s.
  }, { timeout: 45_000, interval: 50 })
}, 60_000)

// A `--role receiver` replica processes nothing: a replay asked of it is queued for the workers (any replica with
// `--role worker`), which run it with every step, recipes included; it answers with their outcome.
it('an event replayed on a receiver-only replica is queued for the workers and reaches the recipes', async () => {
  folder = tempRecipesDir()
  folder.write('followups', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'counts', on: ['call.no_answer'], run: (ctx) => ctx.trigger.events?.length ?? 0 })
`)
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-replay-roles-'))
  // Split roles need a provider both reach (in sandbox mode the sandbox lives in one process): nothing here calls it.
  const env = { PORT: '0', DATA_DIR: dataDir, RECIPES_DIR: folder.dir, WEBHOOK_SECRET: 'whsec_roles', LOG_LEVEL: 'silent', RECONCILE_INTERVAL_SECONDS: '0', ADMIN_TOKEN: TOKEN, VOICE_API_KEY: 'sk_test_acme', VOICE_API_BASE_URL: 'http://127.0.0.1:9' }
  // In sandbox mode a worker of its own is refused at start-up, in one line: it could not reach the sandbox.
  await expect(startServer({ env: { ...env, VOICE_API_KEY: '', VOICE_API_BASE_URL: '' }, role: 'worker' })).rejects.toThrow(
    'Invalid configuration: VOICE_API_KEY is needed by serve --role worker: in sandbox mode the sandbox lives in the process that serves it (--role all or receiver), which a worker cannot reach',
  )
  const receiver = await startServer({ env, role: 'receiver' })
  const event = makeEvent({ event_type: 'call.no_answer' })
  let worker: RunningServer | undefined
  try {
    await storeDeadEvent(receiver.rt, event)
    const replay = fetch(`${receiver.url}/admin/events/${event.event_id}/replay`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } })
    // The worker replica comes up while the receiver waits for it.
    worker = await startServer({ env, role: 'worker' })
    const res = await replay
    expect(res.status).toBe(200)
    expect((await res.json()).data).toEqual({ event_id: event.event_id, status: 'processed', attempts: expect.any(Number) })
    const fires = await receiver.rt.store.db.selectFrom('recipe_event_fires').select(['recipe', 'event_id']).execute()
    expect(fires).toEqual([{ recipe: 'followups', event_id: event.event_id }])
  } finally {
    await worker?.close()
    await receiver.close()
    rmSync(dataDir, { recursive: true, force: true })
  }
}, 60_000)
