import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it, vi } from 'vitest'
import { FIXTURE_RECIPES_DIR } from '../helpers/recipes.ts'
import { startServer, type RunningServer } from '../../src/server.ts'
import { createSilentLogger } from '../../src/utils/logger.ts'
import { listConversations, listEvents, reconcile } from '../../src/webhooks/index.ts'
import { describeEachDialect, openTestStore, type TestStore } from '../helpers/db.ts'
import { cliEnv, runCli } from './helpers.ts'

/**
 * End to end in sandbox mode: the embedded sandbox provider places the call and delivers its signed
 * webhook to this server's receiver over a real port; processing fills the read model.
 */
describeEachDialect('webhooks end to end with the sandbox', (dialect) => {
  let server: RunningServer | undefined
  let store: TestStore | undefined
  let dataDir: string | undefined
  afterEach(async () => {
    await server?.close()
    await store?.close()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
    server = store = dataDir = undefined
  })

  async function start(env: Record<string, string>) {
    store = await openTestStore(dialect)
    dataDir = mkdtempSync(join(tmpdir(), 'sb-e2e-'))
    server = await startServer({
      env: { PORT: '0', DATA_DIR: dataDir, RECIPES_DIR: FIXTURE_RECIPES_DIR, DATABASE_URL: store.url, WEBHOOK_SECRET: 'whsec_e2e_secret', SANDBOX_SPEED: '3000', LOG_LEVEL: 'silent', ...env },
      overrides: { store, skipMigrate: true, log: createSilentLogger() },
    })
    return server
  }

  async function placeCall(s: RunningServer, phone: string): Promise<string> {
    const res = await fetch(`${s.url}/sandbox/v1/call`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk_test_acme', 'content-type': 'application/json' },
      body: JSON.stringify({ agent_id: 101, parameters: [{ name: 'customer_phone', value: phone }, { name: 'name', value: 'Asha' }] }),
    })
    expect(res.status).toBe(200)
    return ((await res.json()) as { data: { trace_id: string } }).data.trace_id
  }

  it('a call placed in the sandbox is stored as a webhook and lands in the read model within seconds', async () => {
    const s = await start({ RECONCILE_INTERVAL_SECONDS: '0' })
    const traceId = await placeCall(s, '+919876543210')
    await vi.waitFor(async () => {
      const [conv] = await listConversations(s.rt, { traceId })
      expect(conv?.status).toBe('completed')
    }, { timeout: 10_000, interval: 50 })
    const [conv] = await listConversations(s.rt, { traceId })
    expect(conv!.source).toBe('webhook')
    expect(conv!.call_parameters).toMatchObject({ customer_phone: '+919876543210', name: 'Asha' })
    expect(conv!.transcript!.length).toBeGreaterThan(0)
    expect(conv!.transcript!.every((t) => t.role === 'agent' || t.role === 'human')).toBe(true)
    // The read model commits before the event's outcome (a separate transaction): wait for that too.
    await vi.waitFor(async () => {
      const events = await listEvents(s.rt, { conversationId: conv!.conversation_id })
      expect(events).toHaveLength(1)
      expect(events[0]).toMatchObject({ source: 'webhook', status: 'processed', event_type: 'call.completed', trace_id: traceId })
    }, { timeout: 10_000, interval: 50 })
  })

  it('with SANDBOX_FAULTS=webhook_drop=1, periodic reconciliation still fills the read model, once', async () => {
    const s = await start({ SANDBOX_FAULTS: 'webhook_drop=1', RECONCILE_INTERVAL_SECONDS: '1' })
    const completed = await placeCall(s, '+919876543211')
    const busy = await placeCall(s, '+919876543216')
    await vi.waitFor(async () => {
      const rows = await listConversations(s.rt, { limit: 10 })
      expect(rows.map((r) => r.trace_id).sort()).toEqual([completed, busy].sort())
      expect(rows.every((r) => r.terminal)).toBe(true)
    }, { timeout: 15_000, interval: 100 })
    const [done] = await listConversations(s.rt, { traceId: completed })
    expect(done).toMatchObject({ status: 'completed', source: 'reconcile' })
    expect(done!.transcript!.length).toBeGreaterThan(0)
    expect((await listConversations(s.rt, { traceId: busy }))[0]!.status).toBe('busy')
    const events = await listEvents(s.rt, { source: 'reconcile' })
    expect(events.map((e) => e.event_id).sort()).toEqual(
      [`reconcile:${done!.conversation_id}:completed`, `reconcile:${(await listConversations(s.rt, { traceId: busy }))[0]!.conversation_id}:busy`].sort(),
    )
    await vi.waitFor(async () => expect((await listEvents(s.rt, { source: 'reconcile', status: 'processed' })).length).toBe(2))
    // Running it again (as the CLI does) finds nothing new. The periodic job (every second here) holds the
    // reconciliation lease while it runs, and a run that meets it is skipped: try until one gets the lease.
    await vi.waitFor(async () => expect(await reconcile(s.rt)).toMatchObject({ skipped: false, synthesized: 0 }), { timeout: 10_000, interval: 50 })
    await vi.waitFor(async () => {
      const cli = await runCli(['reconcile', '--json'], { ...cliEnv({ store: store!, dataDir: dataDir! }), PORT: String(s.port), SANDBOX_SPEED: '3000' })
      expect(cli.err).toBe('')
      expect(cli.code).toBe(0)
      // snake_case, as every --json is.
      expect(JSON.parse(cli.out)).toMatchObject({ skipped: false, synthesized: 0, event_ids: [] })
    }, { timeout: 30_000, interval: 50 })
  })
})
