import { mkdtempSync, rmSync } from 'node:fs'
import { getPriority, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { loadConfig } from '../../src/config/load.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { dayRange } from '../../src/reports/day-range.ts'
import { startServer, type RunningServer } from '../../src/server.ts'
import { stopWaitMs, unresponsiveAfterMs } from '../../src/processing-host.ts'
import { FIXTURE_RECIPES_DIR } from '../helpers/recipes.ts'
import { cookieHeader, login, TOKEN } from '../ui/helpers.ts'
import { tempRecipesDir } from '../recipes/helpers.ts'
import { threadStats as threads } from '../helpers/threads.ts'
import { signFormant } from '../../src/webhooks/index.ts'
import { makeEvent } from '../webhooks/helpers.ts'

const DAY = '2026-11-20'
const TZ = 'Asia/Kolkata'
const ROWS = 20_000
/**
 * The watchdog tests' silence limit: long enough for a thread to start on a loaded machine, short of the service's
 * 10 s minimum (unresponsiveAfterMs, tested on its own below), which these tests would otherwise wait out twice.
 */
const WATCHDOG_MS = 4_000

describe.runIf(process.platform === 'linux')('heavy work a request asks for runs off the receiver under serve', () => {
  let server: RunningServer | undefined
  let dataDir: string | undefined
  afterEach(async () => {
    await server?.close()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
    server = dataDir = undefined
  })

  it("the dashboard's report preview is built in the processing thread, not on the receiver's", async () => {
    // The processing thread is told apart by its nice value.
    const nice = Math.min(19, getPriority() + 7)
    dataDir = mkdtempSync(join(tmpdir(), 'sb-preview-'))
    server = await startServer({
      env: {
        PORT: '0', DATA_DIR: dataDir, RECIPES_DIR: FIXTURE_RECIPES_DIR, WEBHOOK_SECRET: 'whsec_preview_test', LOG_LEVEL: 'silent',
        ADMIN_TOKEN: TOKEN, RECIPES_TIMEZONE: TZ, PROCESSING_NICE: String(nice), RECONCILE_INTERVAL_SECONDS: '0',
      },
      processing: 'thread',
    })
    // A day big enough that building its report takes a visible share of a core.
    const { startMs, endMs } = dayRange(DAY, TZ)
    const sqlite = server.rt.store.sqlite!
    const insert = sqlite.prepare(`INSERT INTO conversations (conversation_id, agent_id, contact_number, status, terminal, duration_seconds, started_at, ended_at,
      failure_reason, trace_id, from_phone, results, call_parameters, last_event_at, source, created_at, updated_at)
      VALUES (?, 101, ?, ?, 1, 30, ?, ?, NULL, ?, '+918035550101', ?, '{}', ?, 'webhook', ?, ?)`)
    sqlite.transaction(() => {
      for (let i = 0; i < ROWS; i++) {
        const ended = startMs + Math.floor(((endMs - startMs) * i) / ROWS)
        const status = i % 3 === 0 ? 'no_answer' : 'completed'
        insert.run(`conv_p${i}`, `+9198${String(i).padStart(8, '0')}`, status, ended - 30_000, ended, `tr_p${i}`, status === 'completed' ? '{"intent":"callback"}' : null, ended, ended, ended)
      }
    })()
    const { jar } = await login(server.url)
    const cookie = cookieHeader(jar)

    const niced = () => threads().filter((t) => t.nice === nice)
    expect(niced()).toHaveLength(1)
    // This test runs on the process's main thread (vitest's forks pool), which is also the server's.
    const main = () => threads().find((t) => t.tid === process.pid)!.cpuMs
    const processingBefore = niced()[0]!.cpuMs
    const mainBefore = main()
    const res = await fetch(`${server.url}/ui/mail/preview?date=${DAY}`, { headers: { cookie } })
    const processingMs = niced()[0]!.cpuMs - processingBefore
    const mainMs = main() - mainBefore

    expect(res.status).toBe(200)
    expect(await res.text()).toContain('20,000')
    // The build's CPU was spent in the processing thread; the main thread only passed the request on.
    expect(processingMs).toBeGreaterThan(mainMs * 2)

    // So is the campaigns page: a day's rows folded per campaign and agent, and the 7- and 30-day trend.
    const processingBefore2 = niced()[0]!.cpuMs
    const mainBefore2 = main()
    const campaigns = await fetch(`${server.url}/ui/campaigns?date=${DAY}`, { headers: { cookie } })
    const processingMs2 = niced()[0]!.cpuMs - processingBefore2
    const mainMs2 = main() - mainBefore2
    expect(campaigns.status).toBe(200)
    expect(await campaigns.text()).toMatch(/<td[^>]*>agent 101<\/td><td[^>]*>20000<\/td>/)
    expect(processingMs2).toBeGreaterThan(mainMs2 * 2)

    // A do-not-call CSV import goes the same way and reports each bad row by its number.
    const { jar: jar2, csrf } = await login(server.url)
    const form = new FormData()
    form.append('file', new Blob(['phone,reason\n+919876543210,asked\nnot a number,x\n'], { type: 'text/csv' }), 'dnc.csv')
    const imported = await fetch(`${server.url}/ui/dnc/import`, { method: 'POST', headers: { cookie: cookieHeader(jar2), 'x-csrf-token': csrf }, body: form })
    expect(imported.status).toBe(200)
    const text = await imported.text()
    expect(text).toMatch(/1 added/)
    expect(text).toContain('1 row(s) with errors')
    expect(text).toMatch(/<td[^>]*>3<\/td><td[^>]*>not a number<\/td>/)
    expect((await server.rt.store.db.selectFrom('dnc').select('phone').execute()).map((r) => r.phone)).toEqual(['+919876543210'])

    // The overview's counts come from the thread too (every 15 s while a dashboard is open).
    const live = await fetch(`${server.url}/ui/overview/live`, { headers: { cookie } })
    expect(live.status).toBe(200)
    const overview = await live.text()
    expect(overview).toContain('Dead events')
    expect(overview).toMatch(/Mail \(7 days\)/)
  }, 60_000)

  it('a first processing thread that cannot start fails the start-up, and no thread is started after it', async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'sb-thread-start-'))
    const capture = captureLogs('info')
    const clock = createManualClock(Date.now())
    // A destination filter in a configuration built in code cannot reach the thread (it is a function), so the
    // thread refuses to start.
    const config = loadConfig({
      env: { PORT: '0', DATA_DIR: dataDir, RECIPES_DIR: FIXTURE_RECIPES_DIR, WEBHOOK_SECRET: 'whsec_thread_start', RECONCILE_INTERVAL_SECONDS: '0' },
      file: { DESTINATIONS: [{ name: 'crm', url: 'https://crm.example.com/hook', secret: `whsec_${'A'.repeat(32)}`, filter: () => true }] },
    })
    await expect(startServer({ config, processing: 'thread', overrides: { log: capture.log, clock } })).rejects.toThrow(/processing thread could not start/)
    await vi.waitFor(() => expect(capture.find(/exited while starting; not restarted/)).toHaveLength(1))
    await clock.advance(5 * 60_000)
    expect(capture.find(/restart/).map((l) => l.msg)).toEqual(['the processing thread exited while starting; not restarted (the service does not start)'])
  })

  it('"Run now" runs the recipe in the processing thread, from the dashboard and the admin API alike', async () => {
    const recipes = tempRecipesDir()
    recipes.write('where', `import { threadId } from 'node:worker_threads'
import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'says which thread ran it', async run() { return { thread: threadId } } })
`)
    dataDir = mkdtempSync(join(tmpdir(), 'sb-run-now-'))
    try {
      server = await startServer({
        env: { PORT: '0', DATA_DIR: dataDir, RECIPES_DIR: recipes.dir, WEBHOOK_SECRET: 'whsec_run_now_test', LOG_LEVEL: 'silent', ADMIN_TOKEN: TOKEN, RECONCILE_INTERVAL_SECONDS: '0' },
        processing: 'thread',
      })
      const admin = await fetch(`${server.url}/admin/recipes/where/run`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } })
      expect(admin.status).toBe(200)
      const { data } = (await admin.json()) as { data: { status: string; summary: { thread: number } } }
      expect(data.status).toBe('succeeded')
      expect(data.summary.thread).not.toBe(0)

      const { jar, csrf } = await login(server.url)
      const ui = await fetch(`${server.url}/ui/recipes/where/run`, {
        method: 'POST', headers: { cookie: cookieHeader(jar), 'x-csrf-token': csrf, 'content-type': 'application/x-www-form-urlencoded' }, body: 'dry_run=0',
      })
      expect(ui.status).toBe(200)
      const page = await ui.text()
      expect(page).toContain('succeeded')
      expect(page).toContain(`<p>thread ${data.summary.thread}</p>`)

      // Mistakes keep their answers: unknown recipe 404.
      expect((await fetch(`${server.url}/admin/recipes/nope/run`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(404)
    } finally {
      recipes.cleanup()
    }
  }, 60_000)
  // A synchronous loop at a recipe file's top level held the first thread while it loaded the recipes: 60 s of silence,
  // then "the processing thread exited while starting" — naming no file — and the service did not start at all.
  it('a recipe file whose top-level code never returns is named and left out: the service starts, runs the others, and loads it once it changes', async () => {
    const recipes = tempRecipesDir()
    recipes.write('spins', `import { defineRecipe } from 'switchboard'
for (;;) {}
export default defineRecipe({ description: 'never loads', run: () => 'never' })
`)
    recipes.write('fine', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'loads', run: () => 'ran' })
`)
    dataDir = mkdtempSync(join(tmpdir(), 'sb-spins-at-load-'))
    const capture = captureLogs('info')
    try {
      server = await startServer({
        env: { PORT: '0', DATA_DIR: dataDir, RECIPES_DIR: recipes.dir, WEBHOOK_SECRET: 'whsec_spins_at_load', ADMIN_TOKEN: TOKEN, RECONCILE_INTERVAL_SECONDS: '0', RECIPES_TYPECHECK: 'false' },
        processing: 'thread',
        processingWatchdogMs: WATCHDOG_MS,
        overrides: { log: capture.log },
      })
      expect(capture.find(/^recipe file spins\.ts never finished loading: its top-level code held the processing thread/)).toHaveLength(1)
      const list = async () => {
        const res = await fetch(`${server!.url}/admin/recipes`, { headers: { authorization: `Bearer ${TOKEN}` } })
        return ((await res.json()) as { data: Array<{ name: string; broken: string | null }> }).data.map((r) => [r.name, r.broken])
      }
      expect(await list()).toEqual([
        ['fine', null],
        ['spins', expect.stringMatching(/^its top-level code never finished loading \(a synchronous loop\?\).*left out until the file changes$/)],
      ])
      const ran = await fetch(`${server.url}/admin/recipes/fine/run`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } })
      expect(((await ran.json()) as { data: { status: string; summary: unknown } }).data).toMatchObject({ status: 'succeeded', summary: 'ran' })
      // Fixed: the thread watching the folder loads it.
      recipes.write('spins', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'loads now', run: () => 'fixed' })
`)
      await vi.waitFor(async () => expect(await list()).toEqual([['fine', null], ['spins', null]]), { timeout: 20_000, interval: 200 })
      // Broken again while the service runs: the reload holds the thread; it is restarted without the file. (Blocked
      // rather than spinning, as the first load did: the same silence, without burning a core for the watchdog's seconds.)
      recipes.write('spins', `import { defineRecipe } from 'switchboard'
while (Date.now() > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)
export default defineRecipe({ description: 'never loads again', run: () => 'never' })
`)
      await vi.waitFor(async () => expect(await list()).toEqual([['fine', null], ['spins', expect.stringMatching(/^its top-level code never finished loading/)]]), { timeout: 30_000, interval: 250 })
      expect(capture.find(/^recipe file spins\.ts never finished loading/)).toHaveLength(2)
      const again = await fetch(`${server.url}/admin/recipes/fine/run`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } })
      expect(((await again.json()) as { data: { status: string } }).data.status).toBe('succeeded')
    } finally {
      recipes.cleanup()
    }
  }, 60_000)

  // Listing loaded every recipe file on the receiver's thread, running its top-level code there: a `while (true)` in a
  // file stopped the receiver, a `Date.now = () => 0` made it refuse every signature (stale timestamp).
  it('listing the recipes (admin API, dashboard) runs no recipe code on the receiver\'s thread', async () => {
    const recipes = tempRecipesDir()
    const marks = join(recipes.dir, 'loaded-on.txt')
    recipes.write('marks', `import { appendFileSync } from 'node:fs'
import { threadId } from 'node:worker_threads'
import { defineRecipe } from 'switchboard'
appendFileSync(${JSON.stringify(marks)}, threadId + '\\n')
export default defineRecipe({ description: 'notes the thread that loads it', schedule: '0 8 * * *', run: () => null })
`)
    dataDir = mkdtempSync(join(tmpdir(), 'sb-list-'))
    try {
      server = await startServer({
        env: { PORT: '0', DATA_DIR: dataDir, RECIPES_DIR: recipes.dir, WEBHOOK_SECRET: 'whsec_list_test', LOG_LEVEL: 'silent', ADMIN_TOKEN: TOKEN, RECONCILE_INTERVAL_SECONDS: '0', RECIPES_TYPECHECK: 'false' },
        processing: 'thread',
      })
      const admin = await fetch(`${server.url}/admin/recipes`, { headers: { authorization: `Bearer ${TOKEN}` } })
      expect(admin.status).toBe(200)
      expect(((await admin.json()) as { data: Array<{ name: string; next_run: string | null }> }).data).toEqual([expect.objectContaining({ name: 'marks', next_run: expect.any(String) })])
      const { jar } = await login(server.url)
      for (const page of ['/ui', '/ui/recipes']) {
        const res = await fetch(`${server.url}${page}`, { headers: { cookie: cookieHeader(jar) } })
        expect(res.status).toBe(200)
        expect(await res.text()).toContain('marks')
      }
      // While the processing thread is down (a recipe ended it: `process.exit` in a thread ends the thread), listing
      // ran here, on the receiver's thread; it waits for the new thread now.
      recipes.write('exits', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'ends its thread', run() { process.exit(3) } })
`)
      const names = async () => ((await (await fetch(`${server!.url}/admin/recipes`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as { data: Array<{ name: string }> }).data.map((r) => r.name)
      await vi.waitFor(async () => expect(await names()).toEqual(['exits', 'marks']), { timeout: 10_000, interval: 100 })
      const exits = await fetch(`${server.url}/admin/recipes/exits/run`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } })
      expect(exits.status).toBeGreaterThanOrEqual(500)
      const readyz = (await (await fetch(`${server.url}/readyz`)).json()) as { processing: string }
      expect(readyz.processing).toBe('restarting')
      expect(await names()).toEqual(['exits', 'marks'])
      const { readFileSync } = await import('node:fs')
      const threadsThatLoaded = new Set(readFileSync(marks, 'utf8').trim().split('\n'))
      expect(threadsThatLoaded.size).toBeGreaterThan(1)
      expect(threadsThatLoaded.has('0')).toBe(false)
    } finally {
      recipes.cleanup()
    }
  }, 60_000)
  // A synchronous loop in a recipe holds the processing thread's event loop: no timer there can cut it (the run's time
  // limit is one), so every later event waited for good while /readyz said "running". The host's watchdog stops a
  // thread that has not answered for a while and restarts it; the run counts as an attempt on its events.
  it("the watchdog's silence limit: 5 s past the recipe time limit, never under 10 s nor over 60 s", () => {
    expect(unresponsiveAfterMs(1_000)).toBe(10_000)
    expect(unresponsiveAfterMs(30_000)).toBe(35_000)
    expect(unresponsiveAfterMs(300_000)).toBe(60_000)
  })
  // A stop waits for a recipe run in progress up to RECIPE_TIMEOUT_SECONDS (README → Shutdown and crashes); the host
  // cut the thread after 30 s whatever the limit, so a 2-minute run was killed mid-way and its events charged.
  it("a stop waits for the thread past the recipe time limit, whatever it is", () => {
    expect(stopWaitMs(300_000)).toBe(310_000)
    expect(stopWaitMs(3_000_000)).toBe(3_010_000)
    expect(stopWaitMs(1_000)).toBe(11_000)
  })

  it('a recipe that never yields is stopped by the watchdog: the thread restarts, later events are processed, its event has spent an attempt', async () => {
    const recipes = tempRecipesDir()
    recipes.write('spins', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'never yields', on: ['call.no_answer'], run() { for (;;) {} } })
`)
    dataDir = mkdtempSync(join(tmpdir(), 'sb-watchdog-'))
    const secret = 'whsec_watchdog_test'
    try {
      server = await startServer({
        env: { PORT: '0', DATA_DIR: dataDir, RECIPES_DIR: recipes.dir, WEBHOOK_SECRET: secret, LOG_LEVEL: 'silent', ADMIN_TOKEN: TOKEN, RECONCILE_INTERVAL_SECONDS: '0', RECIPES_TYPECHECK: 'false', RECIPE_TIMEOUT_SECONDS: '1' },
        processing: 'thread',
        processingWatchdogMs: WATCHDOG_MS,
      })
      const post = async (event: ReturnType<typeof makeEvent>) => {
        const body = JSON.stringify(event)
        const res = await fetch(`${server!.url}/webhooks/formant`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-formantai-signature': signFormant(body, secret), 'x-formantai-timestamp': String(Math.floor(Date.now() / 1000)) } })
        expect(res.status).toBe(204)
      }
      const stuck = makeEvent({ event_id: 'evt_spins', event_type: 'call.no_answer', timestamp: new Date().toISOString() })
      await post(stuck)
      const db = server.rt.store.db
      await vi.waitFor(async () => expect(await db.selectFrom('recipe_event_fires').select('claimed_by').where('event_id', '=', 'evt_spins').executeTakeFirst()).toMatchObject({ claimed_by: expect.any(String) }), { timeout: 10_000, interval: 100 })
      // The receiver still answers while the thread spins; the event waits.
      const later = makeEvent({ event_id: 'evt_after', timestamp: new Date().toISOString() })
      await post(later)
      await vi.waitFor(async () => {
        expect(await db.selectFrom('webhook_events').select('status').where('event_id', '=', 'evt_after').executeTakeFirst()).toEqual({ status: 'processed' })
      }, { timeout: 30_000, interval: 200 })
      expect(await db.selectFrom('recipe_event_fires').select(['status', 'attempts', 'last_error']).where('event_id', '=', 'evt_spins').executeTakeFirst()).toEqual({
        status: 'failed', attempts: 1, last_error: expect.stringMatching(/^interrupted/),
      })
    } finally {
      recipes.cleanup()
    }
  }, 60_000)

  // `--role worker` ran processing on its own event loop, with nothing to watch it: a recipe that never yields held
  // every recipe and the worker's /healthz and /metrics for good. It runs processing in the watched thread too.
  it('under --role worker too: a recipe that never yields is stopped, later events are processed, /healthz answers meanwhile', async () => {
    const recipes = tempRecipesDir()
    // Blocked rather than spinning (the test above spins): the watchdog hears the same silence, and the seconds it
    // waits for do not burn a core that the suite's other files are using.
    recipes.write('spins', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'never yields', on: ['call.no_answer'], run() { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0) } })
`)
    dataDir = mkdtempSync(join(tmpdir(), 'sb-watchdog-worker-'))
    const secret = 'whsec_watchdog_test'
    // Not the sandbox (a worker cannot reach it); this recipe never calls the provider.
    const env = { PORT: '0', DATA_DIR: dataDir, RECIPES_DIR: recipes.dir, WEBHOOK_SECRET: secret, LOG_LEVEL: 'silent', ADMIN_TOKEN: TOKEN, RECONCILE_INTERVAL_SECONDS: '0', RECIPES_TYPECHECK: 'false', RECIPE_TIMEOUT_SECONDS: '1', VOICE_API_KEY: 'sk_live_watchdog', VOICE_API_BASE_URL: 'http://127.0.0.1:9' }
    let worker: RunningServer | undefined
    try {
      server = await startServer({ env, role: 'receiver' })
      worker = await startServer({ env, role: 'worker', processing: 'thread', processingWatchdogMs: WATCHDOG_MS })
      const post = async (event: ReturnType<typeof makeEvent>) => {
        const body = JSON.stringify(event)
        const res = await fetch(`${server!.url}/webhooks/formant`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-formantai-signature': signFormant(body, secret), 'x-formantai-timestamp': String(Math.floor(Date.now() / 1000)) } })
        expect(res.status).toBe(204)
      }
      await post(makeEvent({ event_id: 'evt_spins', event_type: 'call.no_answer', timestamp: new Date().toISOString() }))
      const db = server.rt.store.db
      await vi.waitFor(async () => expect(await db.selectFrom('recipe_event_fires').select('claimed_by').where('event_id', '=', 'evt_spins').executeTakeFirst()).toMatchObject({ claimed_by: expect.any(String) }), { timeout: 10_000, interval: 100 })
      // The worker's own loop still answers while its processing thread spins.
      expect((await fetch(`${worker.url}/healthz`, { signal: AbortSignal.timeout(2_000) })).status).toBe(200)
      await post(makeEvent({ event_id: 'evt_after', timestamp: new Date().toISOString() }))
      await vi.waitFor(async () => {
        expect(await db.selectFrom('webhook_events').select('status').where('event_id', '=', 'evt_after').executeTakeFirst()).toEqual({ status: 'processed' })
      }, { timeout: 30_000, interval: 200 })
      expect(await db.selectFrom('recipe_event_fires').select(['status', 'attempts', 'last_error']).where('event_id', '=', 'evt_spins').executeTakeFirst()).toEqual({
        status: 'failed', attempts: 1, last_error: expect.stringMatching(/^interrupted/),
      })
      expect(await (await fetch(`${worker.url}/metrics`)).text()).toMatch(/switchboard_processing_thread_restarts_total 1/)
    } finally {
      await worker?.close()
      recipes.cleanup()
    }
  }, 60_000)

  // `--role receiver` ran every task on its webhook loop: listing the recipes loaded each file there (a `while (true)` at
  // a file's top stopped the receiver), "Run now" ran the recipe there, the report preview read its day there. It has a
  // thread for them too, which processes nothing.
  it('under --role receiver: listing and running recipes happen in a thread of their own, which processes no event, while webhooks are answered', async () => {
    const recipes = tempRecipesDir()
    const marks = join(recipes.dir, 'loaded-on.txt')
    recipes.write('marks', `import { appendFileSync } from 'node:fs'
import { threadId } from 'node:worker_threads'
import { defineRecipe } from 'switchboard'
appendFileSync(${JSON.stringify(marks)}, 'load ' + threadId + '\\n')
export default defineRecipe({ description: 'notes the thread that loads and runs it', schedule: '0 8 * * *', run() { appendFileSync(${JSON.stringify(marks)}, 'run ' + threadId + '\\n'); return null } })
`)
    dataDir = mkdtempSync(join(tmpdir(), 'sb-receiver-tasks-'))
    const secret = 'whsec_receiver_tasks'
    const env = { PORT: '0', DATA_DIR: dataDir, RECIPES_DIR: recipes.dir, WEBHOOK_SECRET: secret, LOG_LEVEL: 'silent', ADMIN_TOKEN: TOKEN, RECONCILE_INTERVAL_SECONDS: '0', RECIPES_TYPECHECK: 'false', VOICE_API_KEY: 'sk_live_receiver', VOICE_API_BASE_URL: 'http://127.0.0.1:9' }
    try {
      server = await startServer({ env, role: 'receiver', processing: 'thread', processingWatchdogMs: WATCHDOG_MS })
      const auth = { authorization: `Bearer ${TOKEN}` }
      const listed = await fetch(`${server.url}/admin/recipes`, { headers: auth })
      expect(listed.status).toBe(200)
      expect(((await listed.json()) as { data: Array<{ name: string }> }).data.map((r) => r.name)).toEqual(['marks'])
      const ran = await fetch(`${server.url}/admin/recipes/marks/run`, { method: 'POST', headers: auth })
      expect(ran.status).toBe(200)
      const { readFileSync } = await import('node:fs')
      const lines = readFileSync(marks, 'utf8').trim().split('\n')
      expect(lines.some((l) => l.startsWith('run '))).toBe(true)
      // Thread 0 is the receiver's own.
      expect(lines.filter((l) => l.endsWith(' 0'))).toEqual([])

      // The thread processes nothing: a webhook stays pending for the workers (none here), answered at once.
      const body = JSON.stringify(makeEvent({ event_id: 'evt_for_workers', timestamp: new Date().toISOString() }))
      const res = await fetch(`${server.url}/webhooks/formant`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-formantai-signature': signFormant(body, secret), 'x-formantai-timestamp': String(Math.floor(Date.now() / 1000)) } })
      expect(res.status).toBe(204)
      expect(await server.rt.store.db.selectFrom('webhook_events').select('status').where('event_id', '=', 'evt_for_workers').executeTakeFirst()).toEqual({ status: 'pending' })
      const readyz = (await (await fetch(`${server.url}/readyz`)).json()) as { role: string; processing: string; backlog: { pending: number } }
      expect(readyz).toMatchObject({ role: 'receiver', processing: 'none', backlog: { pending: 1 } })
      // The receiver's own gauges still count its backlog (its thread counts none).
      expect(await (await fetch(`${server.url}/metrics`)).text()).toMatch(/switchboard_events_pending\{role="receiver"\} 1/)
    } finally {
      recipes.cleanup()
    }
  }, 60_000)
})
