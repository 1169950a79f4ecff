import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import http from 'node:http'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterEach, expect, it, vi } from 'vitest'
import { openStore } from '../../src/db/connect.ts'
import { deliveryId } from '../../src/destinations/sign.ts'
import { startDeliveryWorker } from '../../src/destinations/worker.ts'
import { createRuntime } from '../../src/runtime.ts'
import { createSilentLogger } from '../../src/utils/logger.ts'
import { createSeededRandom } from '../../src/utils/random.ts'
import { signFormant } from '../../src/webhooks/index.ts'
import { describeEachDialect, openTestStore, type TestStore } from '../helpers/db.ts'
import { createForwardHarness, destination, makeEvent, startSink, verifyStandard, type ForwardHarness, type Sink } from './helpers.ts'
import { freePort } from '../helpers/free-port.ts'

const BIN = resolve(import.meta.dirname, '../../src/bin.mjs')
const SECRET = 'whsec_crash_secret'

function post(port: number, body: string, headers: Record<string, string>): Promise<number> {
  return new Promise((done, fail) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/webhooks/formant', method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      res.resume()
      res.on('end', () => done(res.statusCode ?? 0))
    })
    req.on('error', fail)
    req.end(body)
  })
}

describeEachDialect('destinations: replicas and crashes', (dialect) => {
  const children: ChildProcess[] = []
  const sinks: Sink[] = []
  let store: TestStore | undefined
  let dataDir: string | undefined
  let h: ForwardHarness | undefined
  const cleanups: Array<() => Promise<void>> = []
  afterEach(async () => {
    for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
    for (const fn of cleanups.splice(0).reverse()) await fn()
    await h?.close()
    h = undefined
    for (const s of sinks.splice(0)) await s.close()
    await store?.close()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
    store = dataDir = undefined
  })

  it('two replicas on one database send each delivery once', async () => {
    const s = await startSink((_n, _req, res) => setTimeout(() => res.writeHead(200).end(), 2))
    sinks.push(s)
    h = await createForwardHarness(dialect, [destination(s, { concurrency: 4 })])
    // Replica B: its own runtime, connection pool, instance id and worker on the same database.
    const storeB = await openStore(h.rt.store.url)
    const rtB = await createRuntime(h.rt.config, { store: storeB, skipMigrate: true, clock: h.clock, random: createSeededRandom(999), log: createSilentLogger() })
    const workerB = startDeliveryWorker(rtB)
    cleanups.push(async () => {
      await workerB.stop()
      await rtB.close()
      await storeB.close()
    })
    const events = Array.from({ length: 200 }, () => makeEvent())
    await h.ingest(events)
    workerB.wake()
    await vi.waitFor(async () => expect((await h!.status()).filter((r) => r.status !== 'delivered')).toEqual([]), { timeout: 15_000, interval: 50 })
    const ids = s.requests.map((r) => String(r.headers['webhook-id']))
    expect(ids).toHaveLength(200)
    expect(new Set(ids)).toEqual(new Set(events.map((e) => deliveryId('crm', e.event_id))))
    // Each delivered on its first and only attempt: no replica sent one the other had claimed.
    const rows = await h.rt.store.db.selectFrom('destination_deliveries').select(['attempts']).execute()
    expect(rows.every((r) => r.attempts === 1)).toBe(true)
  }, 30_000)

  it('kill -9 during delivery loses nothing: after restart every event reaches the sink, with its webhook-id', async () => {
    store = await openTestStore(dialect)
    dataDir = mkdtempSync(join(tmpdir(), 'sb-dest-crash-'))
    // A slow sink, so deliveries are in flight when the process dies.
    const s = await startSink((_n, _req, res) => setTimeout(() => res.writeHead(200).end(), 30))
    sinks.push(s)
    let port = 0
    const serve = async () => {
      // A fresh port each start: the killed process's port may have been handed to someone else meanwhile.
      port = await freePort()
      const child = spawn(process.execPath, [BIN, 'serve'], {
        env: {
          ...process.env, PORT: String(port), DATA_DIR: dataDir!, DATABASE_URL: store!.url, WEBHOOK_SECRET: SECRET,
          RECONCILE_INTERVAL_SECONDS: '0', LOG_LEVEL: 'silent', ALLOW_PRIVATE_DESTINATIONS: '1',
          DESTINATIONS: JSON.stringify([destination(s, { concurrency: 4, timeoutMs: 1_000 })]),
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      })
      let stderr = ''
      child.stderr!.on('data', (c: Buffer) => void (stderr += c.toString()))
      children.push(child)
      await vi.waitFor(async () => {
        if (child.exitCode !== null) throw new Error(`serve exited early (${child.exitCode}): ${stderr.slice(-500)}`)
        expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200)
      }, { timeout: 60_000, interval: 100 })
      return child
    }
    const child = await serve()
    const events = Array.from({ length: 300 }, (_, i) => makeEvent({ event_id: `evt_dcrash_${process.pid}_${i}` }))
    for (const e of events) {
      const body = JSON.stringify(e)
      const status = await post(port, body, { 'x-formantai-signature': signFormant(body, SECRET), 'x-formantai-timestamp': String(Math.floor(Date.now() / 1000)) })
      expect(status).toBe(204)
    }
    await vi.waitFor(() => expect(s.requests.length).toBeGreaterThanOrEqual(40), { timeout: 20_000, interval: 5 })
    child.kill('SIGKILL')
    await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(null) : child.once('exit', r)))
    const atCrash = s.requests.length
    expect(atCrash).toBeLessThan(300)

    await serve()
    // The restart gives back the killed process's claims (src/instances.ts), then the rest goes out.
    await vi.waitFor(() => expect(new Set(s.requests.map((r) => r.headers['webhook-id'])).size).toBe(300), { timeout: 60_000, interval: 200 })
    const expected = new Set(events.map((e) => deliveryId('crm', e.event_id)))
    expect(new Set(s.requests.map((r) => String(r.headers['webhook-id'])))).toEqual(expected)
    for (const r of s.requests.slice(0, 3)) expect(verifyStandard(r)).toMatchObject({ event_type: 'call.completed' })
    // Deliveries in flight at the kill were received but not recorded: once their claims are given back they go
    // out again (at least once, same webhook-id), and only those.
    await vi.waitFor(async () => {
      const rows = await store!.db.selectFrom('destination_deliveries').select('status').execute()
      expect(rows).toHaveLength(300)
      expect(rows.every((r) => r.status === 'delivered')).toBe(true)
    }, { timeout: 40_000, interval: 200 })
    expect(s.requests.length - 300).toBeLessThanOrEqual(2 * 4 + 4)
  }, 180_000)
})
