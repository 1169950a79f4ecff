import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
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
 * — here a recipe that throws from a detached timer, which no `try` can catch — the process stays up, the
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
        `  description: 'throws from a detached timer on one event',`,
        `  on: ['call.completed'],`,
        `  run(ctx) {`,
        `    if (ctx.trigger.events?.some((e) => e.event.event_id === 'evt_crash_0')) setTimeout(() => { throw new Error('detached boom') }, 0)`,
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
})
