import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/load.ts'
import { startServer, type RunningServer } from '../../src/server.ts'
import { webhookState } from '../../src/webhooks/state.ts'
import { makeEvent } from '../webhooks/helpers.ts'
import { printFigures } from './helpers/figures.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { sendWithRetries, type Delivery } from './helpers/sender.ts'

/**
 * Promise: with the disk full, SQLite commits fail and the receiver answers 503 + Retry-After (never a
 * 2xx), says so in one clear log line and a metric, the database is not corrupted, and service is full
 * again as soon as there is space — without a restart.
 *
 * How the disk fills: `PRAGMA max_page_count` on every connection that writes. SQLite then fails a write
 * that needs a new page with SQLITE_FULL — the same result code, and the same path through switchboard,
 * as a write(2) that fails with ENOSPC. (A real tiny filesystem needs root to mount.) "Space returns" is
 * the cap being lifted on the same running connections.
 */
const SECRET = 'whsec_fault_full'
const EVENTS = 600

describe('fault: SQLite disk full', () => {
  let server: RunningServer | undefined
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-full-'))
  afterAll(async () => {
    await server?.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('503 + Retry-After while full, a log line and a metric, no corruption, full service once space returns', async () => {
    const logs = captureLogs()
    const config = loadConfig({
      env: { DATA_DIR: dataDir, PORT: '0', WEBHOOK_SECRET: SECRET, RECONCILE_INTERVAL_SECONDS: '0', VOICE_API_KEY: 'sk_fault', VOICE_API_BASE_URL: 'http://127.0.0.1:9' },
    })
    server = await startServer({ config, overrides: { log: logs.log } })
    const rt = server.rt
    const { inbox } = webhookState(rt)
    const file = join(dataDir, 'switchboard.db')

    const bodies = Array.from({ length: EVENTS }, (_, i) => {
      const event = makeEvent({ event_id: `evt_full_${i}`, data: { transcript: `BOT: hello\nHUMAN: ${'words '.repeat(200)}` } })
      return { eventId: event.event_id, body: JSON.stringify(event) }
    })
    let fullAt = 0
    let spaceAt = 0
    let filled = false
    const fill = async () => {
      filled = true
      const pages = Number((rt.store.sqlite!.pragma('page_count', { simple: true }) as number) ?? 0)
      await inbox.sqlitePragma(`max_page_count = ${pages}`)
      fullAt = Date.now()
    }
    let firstFull: Delivery | undefined
    let metricWhileFull = ''
    let readyWhileFull: { status: number; body: unknown } | undefined
    const result = await sendWithRetries({
      port: server.port,
      secret: SECRET,
      bodies,
      lanes: 8,
      retryMs: 100,
      onAnswer: (d, acked) => {
        if (!filled && acked >= EVENTS / 3) void fill()
        if (d.status === 503 && !firstFull) {
          firstFull = d
          // Space comes back two seconds after the first refusal.
          setTimeout(() => {
            void (async () => {
              metricWhileFull = await rt.metrics.metrics()
              const ready = await fetch(`${server!.url}/readyz`)
              readyWhileFull = { status: ready.status, body: await ready.json() }
              await inbox.sqlitePragma('max_page_count = 1073741823')
              spaceAt = Date.now()
            })()
          }, 2_000)
        }
      },
    })
    const refused = result.deliveries.filter((d) => d.status === 503)
    const firstOkAfter = result.deliveries.filter((d) => spaceAt > 0 && d.at >= spaceAt && d.status === 204).sort((a, b) => a.at - b.at)[0]

    // Processing catches up through the same process.
    const deadline = Date.now() + 30_000
    let processed = 0
    for (;;) {
      const row = await rt.store.db.selectFrom('webhook_events').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'processed').executeTakeFirstOrThrow()
      processed = Number(row.n)
      if (processed >= EVENTS || Date.now() > deadline) break
      await new Promise((r) => setTimeout(r, 200))
    }
    const rows = await rt.store.db.selectFrom('webhook_events').select(['event_id', 'duplicates']).execute()
    const stored = new Set(rows.map((r) => r.event_id))
    const lost = bodies.filter((b) => !result.acknowledged.has(b.eventId) || !stored.has(b.eventId)).length
    const metricsAfter = await rt.metrics.metrics()
    const readyAfter = await (await fetch(`${server.url}/readyz`)).json()
    await server.close()
    server = undefined
    const check = new BetterSqlite3(file, { readonly: true })
    const integrity = check.pragma('integrity_check', { simple: true })
    check.close()

    printFigures('sqlite disk full', {
      sent: result.sent,
      acknowledged: result.acknowledged.size,
      stored: rows.length,
      processed,
      duplicates: rows.reduce((n, r) => n + Number(r.duplicates), 0),
      lost,
      recoverySeconds: firstOkAfter ? (firstOkAfter.at - spaceAt) / 1000 : null,
      extra: { '503 while full': refused.length, 'first 503 after the cap': `${firstFull ? firstFull.at - fullAt : -1} ms`, integrity_check: String(integrity) },
    })

    expect(firstFull).toBeDefined()
    expect(refused.length).toBeGreaterThan(0)
    expect(lost).toBe(0)
    expect(rows.length).toBe(EVENTS)
    expect(processed).toBe(EVENTS)
    expect(integrity).toBe('ok')
    expect(logs.find(/^storage is full/).length).toBeGreaterThan(0)
    // Every refusal counted, and logged at most once a second (the refusals came by the hundred a second).
    expect(logs.find(/^storage is full/).length).toBeLessThanOrEqual(Math.ceil((spaceAt - fullAt) / 1000) + 2)
    // /readyz says what the provider sees: not ready while the receiver cannot commit, ready again after.
    expect(readyWhileFull).toMatchObject({ status: 503, body: { status: 'unavailable', error: expect.stringMatching(/^the last webhook could not be stored \(storage is full\)/) } })
    expect(readyAfter).toMatchObject({ status: 'ready' })
    expect(metricWhileFull).toMatch(/^switchboard_storage_full 1$/m)
    expect(metricWhileFull).toMatch(/switchboard_webhooks_rejected_total\{target="formant",reason="storage_full"\} [1-9]/)
    expect(metricsAfter).toMatch(/^switchboard_storage_full 0$/m)
    expect(firstOkAfter).toBeDefined()
  }, 90_000)
})
