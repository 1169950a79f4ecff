import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { makeEvent } from '../webhooks/helpers.ts'
import { printFigures } from './helpers/figures.ts'
import { sendWithRetries } from './helpers/sender.ts'
import { startServe, until, waitForLog, type ServeChild } from '../helpers/serve-child.ts'

/**
 * Promise: in `serve` as shipped (`--role all`), processing runs in a worker thread; when that thread dies
 * — here a recipe that calls `process.exit` (a throw from a timer it left no longer ends the thread: that is logged as
 * the recipe's, test/pipeline/uncaught-recipe-errors.test.ts) — the process stays up, the
 * receiver keeps answering, the thread is restarted with a log line, and processing goes on.
 */
const SECRET = 'whsec_fault_thread'

describe('fault: the processing thread dies', () => {
  let serve: ServeChild | undefined
  const recipesDir = mkdtempSync(join(tmpdir(), 'sb-thread-recipes-'))
  afterAll(async () => {
    await serve?.stop()
    rmSync(recipesDir, { recursive: true, force: true })
  })

  it('is restarted while the receiver keeps accepting; every event is processed', async () => {
    writeFileSync(
      join(recipesDir, 'crashes-once.ts'),
      [
        `import { defineRecipe } from 'switchboard'`,
        `export default defineRecipe({`,
        `  description: 'ends its thread on one event',`,
        `  on: ['call.completed'],`,
        `  run(ctx) {`,
        `    if (ctx.trigger.events?.some((e) => e.event.event_id === 'evt_crash_0')) setTimeout(() => process.exit(3), 0)`,
        `    return { seen: ctx.trigger.events?.length ?? 0 }`,
        `  },`,
        `})`,
        ``,
      ].join('\n'),
    )
    serve = await startServe({ WEBHOOK_SECRET: SECRET, RECIPES_DIR: recipesDir, RECIPES_TIMEZONE: 'UTC', VOICE_API_KEY: 'sk_fault_thread', VOICE_API_BASE_URL: 'http://127.0.0.1:9' })
    await waitForLog(serve, /switchboard ready/)

    const body = (i: number) => {
      const event = makeEvent({ event_id: `evt_crash_${i}` })
      return { eventId: event.event_id, body: JSON.stringify(event) }
    }
    const first = await sendWithRetries({ port: serve.port, secret: SECRET, bodies: [body(0)], lanes: 1, retryMs: 100 })
    await waitForLog(serve, /processing thread stopped; restarting/)
    // /readyz stays 200 (the receiver accepts) and says processing is restarting.
    const during = await fetch(`http://127.0.0.1:${serve.port}/readyz`)
    expect(during.status).toBe(200)
    expect(await during.json()).toMatchObject({ processing: 'restarting' })
    // While the thread is down or restarting, the receiver still accepts.
    const rest = await sendWithRetries({ port: serve.port, secret: SECRET, bodies: Array.from({ length: 40 }, (_, i) => body(i + 1)), lanes: 4, retryMs: 100 })

    const db = new BetterSqlite3(join(serve.dataDir, 'switchboard.db'), { readonly: true })
    const count = (where: string) => (db.prepare(`select count(*) as n from webhook_events ${where}`).get() as { n: number }).n
    try {
      await until(() => count(`where status = 'processed'`) === 41, 'all 41 events to be processed')
      // Every event reaches the recipe once, the one whose run killed the thread too: the dead thread's claims are
      // given back when it is restarted (src/instances.ts), so its batch goes round again instead of waiting out
      // the claim.
      const fires = (status: string) => (db.prepare(`select count(*) as n from recipe_event_fires where recipe = 'crashes-once' and status = ?`).get(status) as { n: number }).n
      await until(() => fires('done') === 41, 'the recipe to have run on all 41 events')
      printFigures('processing thread dies', {
        sent: first.sent + rest.sent,
        acknowledged: first.acknowledged.size + rest.acknowledged.size,
        stored: count(''),
        processed: count(`where status = 'processed'`),
        duplicates: 0,
        lost: 41 - count(''),
        recoverySeconds: null,
        extra: { 'thread restarts': serve.logs(/processing thread stopped; restarting/).length, 'recipe fires done': fires('done') },
      })
      expect(serve.alive()).toBe(true)
      expect(first.acknowledged.size + rest.acknowledged.size).toBe(41)
      expect(rest.deliveries.every((d) => d.status === 204)).toBe(true)
      expect(count(`where status = 'processed'`)).toBe(41)
      expect(serve.logs(/switchboard ready/).length).toBe(1)
      expect(await (await fetch(`http://127.0.0.1:${serve.port}/readyz`)).json()).toMatchObject({ processing: 'running' })
    } finally {
      db.close()
    }
  }, 90_000)

  it('a Run now whose recipe ends the thread is answered 503 with Retry-After and why — it was a bare 500 "internal error"', async () => {
    await serve?.stop()
    const dir = mkdtempSync(join(tmpdir(), 'sb-thread-runnow-'))
    try {
      writeFileSync(
        join(dir, 'ends-thread.ts'),
        `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'ends its thread when run', run() { process.exit(3) } })\n`,
      )
      const token = 'thread-crash-admin-token-0123456789'
      serve = await startServe({ WEBHOOK_SECRET: SECRET, RECIPES_DIR: dir, RECIPES_TIMEZONE: 'UTC', RECIPES_TYPECHECK: 'false', ADMIN_TOKEN: token })
      await waitForLog(serve, /switchboard ready/)
      const res = await fetch(`http://127.0.0.1:${serve.port}/admin/recipes/ends-thread/run`, { method: 'POST', headers: { authorization: `Bearer ${token}` } })
      expect(res.status).toBe(503)
      expect(res.headers.get('retry-after')).toBe('5')
      expect(JSON.stringify(await res.json())).toContain('the processing thread stopped before finishing')
      await waitForLog(serve, /processing thread stopped; restarting/)
    } finally {
      await serve?.stop()
      serve = undefined
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)

  it('while the restarted thread is starting, /metrics counts each pending event once', async () => {
    await serve?.stop()
    const dir = mkdtempSync(join(tmpdir(), 'sb-thread-gauge-'))
    const crashed = join(dir, 'crashed.flag')
    const go = join(dir, 'go.flag')
    const loading = join(dir, 'loading.flag')
    try {
      // Loading waits, once the thread has crashed, until the test lets it go: the restarted thread stays "starting"
      // (its gauges registered, not yet ready) for as long as the test looks.
      writeFileSync(
        join(dir, 'gated-load.ts'),
        [
          `import { existsSync, writeFileSync } from 'node:fs'`,
          `import { defineRecipe } from 'switchboard'`,
          `if (existsSync(${JSON.stringify(crashed)})) writeFileSync(${JSON.stringify(loading)}, 'x')`,
          `while (existsSync(${JSON.stringify(crashed)}) && !existsSync(${JSON.stringify(go)})) await new Promise((r) => setTimeout(r, 10))`,
          `export default defineRecipe({ description: 'loads once let go after the crash', on: ['call.busy'], run: () => ({}) })`,
          ``,
        ].join('\n'),
      )
      writeFileSync(
        join(dir, 'crash-once.ts'),
        [
          `import { existsSync, writeFileSync } from 'node:fs'`,
          `import { defineRecipe } from 'switchboard'`,
          `export default defineRecipe({`,
          `  description: 'kills the thread once',`,
          `  on: ['call.completed'],`,
          `  run() {`,
          `    if (!existsSync(${JSON.stringify(crashed)})) { writeFileSync(${JSON.stringify(crashed)}, 'x'); setTimeout(() => process.exit(3), 0) }`,
          `    return {}`,
          `  },`,
          `})`,
          ``,
        ].join('\n'),
      )
      serve = await startServe({ WEBHOOK_SECRET: SECRET, RECIPES_DIR: dir, RECIPES_TIMEZONE: 'UTC', VOICE_API_KEY: 'sk_fault_thread', VOICE_API_BASE_URL: 'http://127.0.0.1:9', BACKLOG_DEGRADED_SECONDS: '3600' })
      await waitForLog(serve, /switchboard ready/)
      const body = (id: string, type: 'call.completed' | 'call.busy') => {
        const event = makeEvent({ event_id: id, event_type: type })
        return { eventId: event.event_id, body: JSON.stringify(event) }
      }
      await sendWithRetries({ port: serve.port, secret: SECRET, bodies: [body('evt_gauge_crash', 'call.completed')], lanes: 1, retryMs: 100 })
      await waitForLog(serve, /processing thread stopped; restarting/)
      await sendWithRetries({ port: serve.port, secret: SECRET, bodies: Array.from({ length: 20 }, (_, i) => body(`evt_gauge_${i}`, 'call.busy')), lanes: 4, retryMs: 100 })
      const db = new BetterSqlite3(join(serve.dataDir, 'switchboard.db'), { readonly: true })
      try {
        const pending = () => (db.prepare(`select count(*) as n from webhook_events where status in ('pending', 'failed')`).get() as { n: number }).n
        // The restarted thread is up (its restart delay is a second) and loading its recipes.
        await until(() => existsSync(loading) && pending() >= 20, 'the restarted thread to be loading')
        expect(await (await fetch(`${serve.url}/readyz`)).json()).toMatchObject({ processing: 'restarting' })
        for (let look = 0; look < 5; look++) {
          const text = await (await fetch(`${serve.url}/metrics`)).text()
          const gauge = Number(/^switchboard_events_pending\{role="all"\} (\d+)/m.exec(text)?.[1])
          expect(gauge).toBe(pending())
          // The restart is counted.
          expect(text).toMatch(/^switchboard_processing_thread_restarts_total 1$/m)
        }
        writeFileSync(go, 'x')
        await until(() => pending() === 0, 'the backlog to drain once the thread is ready')
      } finally {
        db.close()
      }
    } finally {
      writeFileSync(go, 'x')
      rmSync(dir, { recursive: true, force: true })
    }
  }, 90_000)

  it('while the thread is busy past the metrics wait, /metrics still has the backlog gauges and the thread\'s counters', async () => {
    await serve?.stop()
    const dir = mkdtempSync(join(tmpdir(), 'sb-thread-busy-'))
    const spinning = join(dir, 'spinning.flag')
    try {
      writeFileSync(join(dir, 'quick.ts'), `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'counts', on: ['call.completed'], run: () => ({}) })\n`)
      // Four seconds of synchronous work: past /metrics' 2 s wait for the thread, within its watchdog's 10 s.
      writeFileSync(
        join(dir, 'heavy.ts'),
        [
          `import { writeFileSync } from 'node:fs'`,
          `import { defineRecipe } from 'switchboard'`,
          `export default defineRecipe({ description: 'four seconds of synchronous work', on: ['call.busy'], run() {`,
          `  writeFileSync(${JSON.stringify(spinning)}, 'x')`,
          `  const end = Date.now() + 4000`,
          `  while (Date.now() < end) {}`,
          `  return {}`,
          `} })`,
          ``,
        ].join('\n'),
      )
      serve = await startServe({ WEBHOOK_SECRET: SECRET, RECIPES_DIR: dir, RECIPES_TIMEZONE: 'UTC', RECIPES_TYPECHECK: 'false', VOICE_API_KEY: 'sk_fault_thread', VOICE_API_BASE_URL: 'http://127.0.0.1:9', BACKLOG_DEGRADED_SECONDS: '3600' })
      await waitForLog(serve, /switchboard ready/)
      const body = (id: string, type: 'call.completed' | 'call.busy') => {
        const event = makeEvent({ event_id: id, event_type: type })
        return { eventId: event.event_id, body: JSON.stringify(event) }
      }
      const quickRuns = (text: string) => Number(/^switchboard_recipe_runs_total\{recipe="quick",trigger="event",outcome="succeeded"\} (\d+)/m.exec(text)?.[1] ?? 0)
      await sendWithRetries({ port: serve.port, secret: SECRET, bodies: [body('evt_busy_first', 'call.completed')], lanes: 1, retryMs: 100 })
      let before = ''
      await until(async () => quickRuns((before = await (await fetch(`${serve!.url}/metrics`)).text())) === 1, 'the first run to be counted')

      await sendWithRetries({ port: serve.port, secret: SECRET, bodies: [body('evt_busy_spin', 'call.busy')], lanes: 1, retryMs: 100 })
      await until(() => existsSync(spinning), 'the heavy recipe to be spinning')
      await sendWithRetries({ port: serve.port, secret: SECRET, bodies: [1, 2, 3].map((i) => body(`evt_busy_${i}`, 'call.completed')), lanes: 1, retryMs: 100 })
      const during = await (await fetch(`${serve.url}/metrics`)).text()
      expect(Number(/^switchboard_events_pending\{role="all"\} (\d+)/m.exec(during)?.[1])).toBeGreaterThanOrEqual(3)
      expect(during).toMatch(/^switchboard_events_oldest_pending_age_seconds\{role="all"\} [\d.]+$/m)
      expect(quickRuns(during)).toBe(1)
      // Once it answers again, the gauges are its own (counted once) and the runs go on being counted.
      await until(async () => quickRuns(await (await fetch(`${serve!.url}/metrics`)).text()) === 2, 'the queued events to run')
      const after = await (await fetch(`${serve.url}/metrics`)).text()
      expect(after.match(/^switchboard_events_pending\{/gm)).toHaveLength(1)
      expect(before).toMatch(/^switchboard_processing_thread_restarts_total 0$/m)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 90_000)
})
