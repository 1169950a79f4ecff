import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { makeEvent } from '../webhooks/helpers.ts'
import { printFigures } from './helpers/figures.ts'
import { sendWithRetries } from './helpers/sender.ts'
import { startServe, until, waitForLog, type ServeChild } from '../helpers/serve-child.ts'

/**
 * Promise: a recipe that leaves a rejected promise behind (`void fetch(…)` that fails) does not end the
 * process or restart anything — with processing in the main process (`--role worker`) or in its thread
 * (`--role all`). The rejection is logged with its message and counted, and every event is processed.
 */
const SECRET = 'whsec_fault_rejection'
const EVENTS = 20

describe('fault: a recipe leaves an unhandled rejection', () => {
  const procs: ServeChild[] = []
  const dirs: string[] = []
  afterEach(async () => {
    for (const p of procs.splice(0)) await p.stop()
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
  })

  for (const role of ['worker', 'all'] as const) {
    it(`--role ${role}: logged and counted; the process keeps processing`, async () => {
      const recipesDir = mkdtempSync(join(tmpdir(), 'sb-rejection-recipes-'))
      const dataDir = mkdtempSync(join(tmpdir(), 'sb-rejection-data-'))
      dirs.push(recipesDir, dataDir)
      writeFileSync(
        join(recipesDir, 'rejects.ts'),
        [
          `import { defineRecipe } from 'switchboard'`,
          `export default defineRecipe({`,
          `  description: 'leaves a rejected promise behind on one event',`,
          `  on: ['call.completed'],`,
          `  run(ctx) {`,
          `    if (ctx.trigger.events?.some((e) => e.event.event_id === 'evt_rej_0')) void Promise.reject(new Error('detached rejection from a recipe'))`,
          `    return { seen: ctx.trigger.events?.length ?? 0 }`,
          `  },`,
          `})`,
          ``,
        ].join('\n'),
      )
      const env = { WEBHOOK_SECRET: SECRET, RECIPES_DIR: recipesDir, RECIPES_TIMEZONE: 'UTC', VOICE_API_KEY: 'sk_fault_rejection', VOICE_API_BASE_URL: 'http://127.0.0.1:9' }
      // `--role worker` has no receiver: a receiver process on the same SQLite file stores the events.
      const receiver = role === 'worker' ? await startServe(env, { dataDir, args: ['--role', 'receiver'] }) : undefined
      const processor = await startServe(env, { dataDir, args: ['--role', role] })
      procs.push(...(receiver ? [receiver] : []), processor)
      await waitForLog(processor, /switchboard ready/)
      const bodies = Array.from({ length: EVENTS }, (_, i) => {
        const event = makeEvent({ event_id: `evt_rej_${i}` })
        return { eventId: event.event_id, body: JSON.stringify(event) }
      })
      const sent = await sendWithRetries({ port: (receiver ?? processor).port, secret: SECRET, bodies, lanes: 4, retryMs: 100 })
      await waitForLog(processor, /unhandled promise rejection/)

      const db = new BetterSqlite3(join(dataDir, 'switchboard.db'), { readonly: true })
      const count = (where: string) => (db.prepare(`select count(*) as n from webhook_events ${where}`).get() as { n: number }).n
      try {
        await until(() => count(`where status = 'processed'`) === EVENTS, `all ${EVENTS} events to be processed`)
        const metrics = await (await fetch(`${processor.url}/metrics`)).text()
        printFigures(`unhandled rejection [--role ${role}]`, {
          sent: sent.sent,
          acknowledged: sent.acknowledged.size,
          stored: count(''),
          processed: count(`where status = 'processed'`),
          duplicates: 0,
          lost: EVENTS - count(''),
          recoverySeconds: null,
          extra: { 'rejections logged': processor.logs(/unhandled promise rejection/).length, restarts: processor.logs(/restarting/).length },
        })
        expect(processor.alive()).toBe(true)
        const logged = processor.logs(/unhandled promise rejection/)
        expect(logged).toHaveLength(1)
        expect(JSON.stringify(logged[0]!.err)).toContain('detached rejection from a recipe')
        expect(processor.logs(/restarting/)).toEqual([])
        expect(metrics).toMatch(/^switchboard_unhandled_rejections_total 1$/m)
        expect(count(`where status = 'processed'`)).toBe(EVENTS)
      } finally {
        db.close()
      }
    }, 60_000)
  }

  it('--role worker: a rejection left while the service stops (a run still in flight) is logged too; the stop ends with exit 0', async () => {
    const recipesDir = mkdtempSync(join(tmpdir(), 'sb-rejection-recipes-'))
    const dataDir = mkdtempSync(join(tmpdir(), 'sb-rejection-data-'))
    dirs.push(recipesDir, dataDir)
    const started = join(recipesDir, 'started.flag')
    const stopping = join(recipesDir, 'stopping.flag')
    // The run leaves its rejection only once the test has sent SIGTERM (it writes the second flag then).
    writeFileSync(
      join(recipesDir, 'late.ts'),
      [
        `import { existsSync, writeFileSync } from 'node:fs'`,
        `import { defineRecipe } from 'switchboard'`,
        `export default defineRecipe({`,
        `  description: 'leaves a rejected promise behind while the service stops',`,
        `  on: ['call.completed'],`,
        `  async run() {`,
        `    writeFileSync(${JSON.stringify(started)}, 'x')`,
        `    while (!existsSync(${JSON.stringify(stopping)})) await new Promise((r) => setTimeout(r, 10))`,
        `    void Promise.reject(new Error('rejection during the stop'))`,
        `    await new Promise((r) => setTimeout(r, 50))`,
        `    return { ok: true }`,
        `  },`,
        `})`,
        ``,
      ].join('\n'),
    )
    const env = { WEBHOOK_SECRET: SECRET, RECIPES_DIR: recipesDir, RECIPES_TIMEZONE: 'UTC', VOICE_API_KEY: 'sk_fault_rejection', VOICE_API_BASE_URL: 'http://127.0.0.1:9' }
    const receiver = await startServe(env, { dataDir, args: ['--role', 'receiver'] })
    const worker = await startServe(env, { dataDir, args: ['--role', 'worker'] })
    procs.push(receiver, worker)
    await waitForLog(worker, /switchboard ready/)
    const event = makeEvent({ event_id: 'evt_rej_stop' })
    await sendWithRetries({ port: receiver.port, secret: SECRET, bodies: [{ eventId: event.event_id, body: JSON.stringify(event) }], lanes: 1, retryMs: 100 })
    await until(() => existsSync(started), 'the recipe run to start')
    const exited = new Promise<number | null>((resolve) => worker.child.once('exit', (code) => resolve(code)))
    worker.child.kill('SIGTERM')
    await until(() => worker.lines.some((line) => line.includes('shutting down')), 'the worker to start stopping')
    writeFileSync(stopping, 'x')
    expect(await exited).toBe(0)
    expect(worker.lines.some((line) => line.includes('switchboard stopped'))).toBe(true)
    expect(JSON.stringify(worker.logs(/unhandled promise rejection/))).toContain('rejection during the stop')
  }, 60_000)
})
