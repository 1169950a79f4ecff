import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import http from 'node:http'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterEach, expect, it, vi } from 'vitest'
import { signFormant } from '../../src/webhooks/index.ts'
import { describeEachDialect, openTestStore, type TestStore } from '../helpers/db.ts'
import { makeEvent } from './helpers.ts'
import { FIXTURE_RECIPES_DIR } from '../helpers/recipes.ts'
import { freePort } from '../helpers/free-port.ts'

const BIN = resolve(import.meta.dirname, '../../src/bin.mjs')
const SECRET = 'whsec_crash_secret'

function post(port: number, path: string, body: string, headers: Record<string, string>): Promise<number> {
  return new Promise((done, fail) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      res.resume()
      res.on('end', () => done(res.statusCode ?? 0))
    })
    req.on('error', fail)
    req.end(body)
  })
}

const ADMIN_TOKEN = 'crash-test-admin-token-0123'

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  return (await res.json()) as T
}

describeEachDialect('webhooks survive a crash (SIGKILL mid-load)', (dialect) => {
  const children: ChildProcess[] = []
  let store: TestStore | undefined
  let dataDir: string | undefined
  afterEach(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
    children.length = 0
    await store?.close()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
    store = dataDir = undefined
  })

  async function serve(port: number): Promise<ChildProcess> {
    const child = spawn(process.execPath, [BIN, 'serve'], {
      env: {
        ...process.env, PORT: String(port), DATA_DIR: dataDir!, DATABASE_URL: store!.url, WEBHOOK_SECRET: SECRET,
        RECONCILE_INTERVAL_SECONDS: '0', LOG_LEVEL: 'silent', ADMIN_TOKEN, RECIPES_DIR: FIXTURE_RECIPES_DIR,
      },
      stdio: 'ignore',
    })
    children.push(child)
    await vi.waitFor(async () => expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200), { timeout: 20_000, interval: 100 })
    return child
  }

  it('every event answered 2xx before the kill is stored, and pending ones are processed after restart', async () => {
    store = await openTestStore(dialect)
    dataDir = mkdtempSync(join(tmpdir(), 'sb-crash-'))
    const port = await freePort()
    const child = await serve(port)

    const acked = new Set<string>()
    let sent = 0
    let killed = false
    const lane = async () => {
      for (let i = 0; i < 2000 && !killed; i++) {
        const event = makeEvent({ event_id: `evt_crash_${process.pid}_${sent++}` })
        const body = JSON.stringify(event)
        try {
          const status = await post(port, '/webhooks/formant', body, {
            'x-formantai-signature': signFormant(body, SECRET),
            'x-formantai-timestamp': String(Math.floor(Date.now() / 1000)),
          })
          if (status === 204) acked.add(event.event_id)
          else if (!killed) throw new Error(`unexpected ${status}`)
        } catch (error) {
          if (!killed) throw error
        }
      }
    }
    const lanes = Array.from({ length: 12 }, lane)
    await vi.waitFor(() => expect(acked.size).toBeGreaterThanOrEqual(300), { timeout: 20_000, interval: 5 })
    killed = true
    child.kill('SIGKILL')
    await Promise.all(lanes)
    await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(null) : child.once('exit', r)))
    expect(child.signalCode).toBe('SIGKILL')

    // What the database holds right after the crash: every acknowledged event (and maybe a few whose
    // answer never arrived); some are still pending because processing is asynchronous.
    const stored = await store.db.selectFrom('webhook_events').select(['event_id', 'status']).execute()
    const storedIds = new Set(stored.map((r) => r.event_id))
    const missing = [...acked].filter((id) => !storedIds.has(id))
    expect(missing).toEqual([])
    const pendingAtCrash = stored.filter((r) => r.status !== 'processed').length

    await serve(port)
    await vi.waitFor(async () => {
      const { data } = await getJson<{ data: Array<{ event_id: string }> }>(`http://127.0.0.1:${port}/admin/events?status=processed&limit=10000`)
      expect(data.length).toBe(stored.length)
    }, { timeout: 45_000, interval: 200 }) // the restart gives back the killed process's claims (src/instances.ts)
    const conversations = await store.db.selectFrom('conversations').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
    expect(Number(conversations.n)).toBe(stored.length)
    expect(pendingAtCrash + acked.size).toBeGreaterThan(0)
  }, 90_000)
})
