import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { loadConfig } from '../../src/config/load.ts'
import { createSilentLogger } from '../../src/utils/logger.ts'
import { closedPort, startSmtp } from '../reports/smtp.ts'
import { startTcpGate, type TcpGate } from './helpers/tcp-gate.ts'
import { shippedRecipesCopy } from '../helpers/recipes.ts'
import pg from 'pg'
import { createApp, startServer, type RunningServer } from '../../src/server.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

/**
 * Promise: /readyz reflects a dependency going down within 5 s, and /metrics has an up/down gauge per
 * dependency. SMTP counts when a recipe in RECIPES_DIR mails (the shipped daily-report does); the
 * database going down is covered by the Postgres cut case (503 within 5 s).
 */
describe('fault: readiness follows the dependencies', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-ready-'))
  let server: RunningServer | undefined
  let gate: TcpGate | undefined
  let smtp: Awaited<ReturnType<typeof startSmtp>> | undefined
  afterAll(async () => {
    await server?.close()
    await gate?.close()
    await smtp?.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('SMTP down → degraded within 5 s (still 200: webhooks keep flowing), back to ready; upstream down from the proxy', async () => {
    smtp = await startSmtp()
    gate = await startTcpGate(smtp.port)
    const config = loadConfig({
      env: {
        DATA_DIR: dataDir, PORT: '0', WEBHOOK_SECRET: 'whsec_ready', SMTP_URL: `smtp://127.0.0.1:${gate.port}`, REPORT_TO: 'ops@example.com',
        RECIPES_DIR: shippedRecipesCopy(), VOICE_API_KEY: 'sk_ready', VOICE_API_BASE_URL: `http://127.0.0.1:${await closedPort()}`,
        RECONCILE_INTERVAL_SECONDS: '0',
      },
    })
    server = await startServer({ config, background: false, overrides: { log: createSilentLogger() } })
    const readyz = async () => {
      const res = await fetch(`${server!.url}/readyz`)
      return { status: res.status, body: (await res.json()) as { status: string; dependencies: Record<string, string> } }
    }
    const gauge = async (dep: string) => Number(new RegExp(`^switchboard_dependency_up\\{dependency="${dep}"\\} (\\d)$`, 'm').exec(await (await fetch(`${server!.url}/metrics`)).text())?.[1])

    // Nothing has called the provider yet: unknown, which is not degraded (and no gauge series).
    expect(await readyz()).toMatchObject({ status: 200, body: { status: 'ready', dependencies: { database: 'up', smtp: 'up', upstream: expect.stringMatching(/^unknown/) } } })
    expect(await gauge('upstream')).toBeNaN()
    expect(await gauge('database')).toBe(1)
    expect(await gauge('smtp')).toBe(1)

    await gate.cut()
    const cutAt = Date.now()
    await vi.waitFor(async () => expect((await readyz()).body.dependencies.smtp).toMatch(/^down/), { timeout: 5_000, interval: 200 })
    const seenAfter = Date.now() - cutAt
    const down = await readyz()
    expect(down.status).toBe(200)
    expect(down.body.status).toBe('degraded')
    expect(await gauge('smtp')).toBe(0)
    expect(await gauge('database')).toBe(1)

    await gate.restore()
    await vi.waitFor(async () => expect((await readyz()).body.status).toBe('ready'), { timeout: 5_000, interval: 200 })
    expect(await gauge('smtp')).toBe(1)

    // The provider unreachable: the proxy's own request says so.
    const proxied = await fetch(`${server.url}/v1/conversations?limit=1`, { headers: { authorization: 'Bearer sk_ready' } })
    expect(proxied.status).toBe(502)
    expect(await gauge('upstream')).toBe(0)
    expect((await readyz()).body).toMatchObject({ status: 'degraded', dependencies: { upstream: expect.stringMatching(/^down/) } })
    process.stdout.write(`[fault] readiness: smtp down seen by /readyz after ${seenAfter} ms (limit 5000 ms)\n`)
  }, 30_000)
})

// /readyz asked the inbox for its backlog with no time limit: a lock on webhook_events (ALTER TABLE, VACUUM FULL, a
// repack) held the answer for as long as it lasted — 14 s — and then said "ready", while every webhook meanwhile was
// answered 503. Every question it asks is bounded by the probes' 2 s.
describe.skipIf(!process.env.DATABASE_URL_TEST)('fault: /readyz while the inbox is locked (Postgres)', () => {
  let rt: TestRuntime | undefined
  let locker: pg.Client | undefined
  afterAll(async () => {
    await locker?.end().catch(() => undefined)
    await rt?.close()
  })

  it('answers 503 within 5 s naming the inbox, and ready again once the lock goes', async () => {
    rt = await createTestRuntime({ dialect: 'postgres' })
    const app = createApp(rt)
    locker = new pg.Client({ connectionString: process.env.DATABASE_URL_TEST, options: `-c search_path=${rt.store.schema}` })
    await locker.connect()
    await locker.query('begin')
    await locker.query('lock table webhook_events in access exclusive mode')
    const started = performance.now()
    const res = await app.fetch(new Request('http://localhost/readyz'))
    const took = performance.now() - started
    expect(res.status).toBe(503)
    // Which question meets the lock first — the migrations' check reads the tables' list, the backlog the inbox — it is bounded.
    const said = (await res.json()) as { status: string; error: string; dependencies: { database: string } }
    expect(said).toMatchObject({ status: 'unavailable', error: expect.stringMatching(/^the (inbox \(webhook_events\)|database \(reading its migrations\)) did not answer within 2000 ms/) })
    // Not `up` beside it, whichever question met the lock (the probe's answer is a few seconds old).
    expect(said.dependencies.database).toMatch(/^down: the (inbox|database) .*(a lock on a table|is the table locked)/)
    expect(took).toBeLessThan(5_000)
    await locker.query('commit')
    await vi.waitFor(async () => expect((await app.fetch(new Request('http://localhost/readyz'))).status).toBe(200), { timeout: 10_000, interval: 100 })
    process.stdout.write(`[fault] readiness: inbox locked, /readyz answered 503 after ${Math.round(took)} ms (limit 5000 ms)\n`)
  }, 30_000)
})
