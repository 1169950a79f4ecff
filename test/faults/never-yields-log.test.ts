import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { makeEvent } from '../webhooks/helpers.ts'
import { signFormant } from '../../src/webhooks/verify.ts'
import { startServe, waitForLog, type ServeChild } from '../helpers/serve-child.ts'

/**
 * Promise (README → failure table, "the processing thread stopped answering"): find the recipe in the log lines before
 * it. The processing thread's lines were written asynchronously: while one write was under way the next were buffered,
 * to go out when the thread's event loop had a turn — which a loop holding the thread never gives. A recipe's `ctx.log`
 * lines just before such a loop never reached stdout, and were lost with the thread when the watchdog stopped it.
 */
const SECRET = 'whsec_fault_never_yields'

describe('fault: a recipe that never yields', () => {
  let serve: ServeChild | undefined
  const recipesDir = mkdtempSync(join(tmpdir(), 'sb-never-yields-'))
  afterAll(async () => {
    await serve?.stop()
    rmSync(recipesDir, { recursive: true, force: true })
  })

  it('leaves the lines it logged before the loop in the log, ahead of the watchdog\'s', async () => {
    writeFileSync(
      join(recipesDir, 'holds.ts'),
      `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'logs, then holds its thread',
  on: ['call.no_answer'],
  run(ctx) {
    // Lines in a row, as a busy run writes them: the first goes out while the next wait for its write to finish.
    for (let i = 0; i < 200; i++) ctx.log.info({ i }, 'working')
    ctx.log.info('about to wait for ever')
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)
  },
})
`,
    )
    serve = await startServe({ RECIPES_DIR: recipesDir, WEBHOOK_SECRET: SECRET, RECIPES_TYPECHECK: 'false', RECIPE_TIMEOUT_SECONDS: '1' })
    const body = JSON.stringify(makeEvent({ event_type: 'call.no_answer', timestamp: new Date().toISOString() }))
    const res = await fetch(`${serve.url}/webhooks/formant`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-formantai-signature': signFormant(body, SECRET), 'x-formantai-timestamp': String(Math.floor(Date.now() / 1000)) } })
    expect(res.status).toBe(204)
    await waitForLog(serve, /stopped answering/, 40_000)
    const said = serve.logs(/^about to wait for ever$/)
    expect(said).toHaveLength(1)
    const lines = serve.lines
    expect(lines.findIndex((l) => l.includes('about to wait for ever'))).toBeLessThan(lines.findIndex((l) => l.includes('stopped answering')))
    process.stdout.write('[fault] never-yields: the recipe\'s last line before the loop is in the log\n')
  }, 60_000)
})

describe('fault: a recipe holds the processing thread, /metrics meanwhile', () => {
  let serve: ServeChild | undefined
  const recipesDir = mkdtempSync(join(tmpdir(), 'sb-never-yields-metrics-'))
  afterAll(async () => {
    await serve?.stop()
    rmSync(recipesDir, { recursive: true, force: true })
  })

  // While the thread is too busy to answer, /metrics showed its last answer's counters only: the call queue's depth,
  // which only the thread keeps, read 0 — an alert on it was told the queue was empty while 1,982 calls waited.
  it("keeps the busy thread's last call queue depth, not 0", async () => {
    writeFileSync(
      join(recipesDir, 'queues.ts'),
      `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'queues a call the provider cannot take (it is down)',
  on: ['call.completed'],
  async run(ctx) {
    await ctx.campaigns.scheduleCall({ agentId: 101, phone: '+14155550123', idempotencyKey: 'queued-while-busy' })
  },
})
`,
    )
    writeFileSync(
      join(recipesDir, 'holds.ts'),
      `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'holds its thread', on: ['call.no_answer'], run() { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0) } })
`,
    )
    const closed = await (await import('../reports/smtp.ts')).closedPort()
    serve = await startServe({
      RECIPES_DIR: recipesDir, WEBHOOK_SECRET: SECRET, RECIPES_TYPECHECK: 'false', RECIPE_TIMEOUT_SECONDS: '1',
      VOICE_API_KEY: 'sk_live_busy_metrics', VOICE_API_BASE_URL: `http://127.0.0.1:${closed}`,
    })
    const post = async (type: `call.${string}`) => {
      const body = JSON.stringify(makeEvent({ event_type: type, timestamp: new Date().toISOString() }))
      const res = await fetch(`${serve!.url}/webhooks/formant`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-formantai-signature': signFormant(body, SECRET), 'x-formantai-timestamp': String(Math.floor(Date.now() / 1000)) } })
      expect(res.status).toBe(204)
    }
    const depth = async () => Number(/^switchboard_call_queue_depth (\S+)$/m.exec(await (await fetch(`${serve!.url}/metrics`)).text())?.[1])
    await post('call.completed')
    const started = Date.now()
    while ((await depth()) !== 1) {
      if (Date.now() - started > 30_000) throw new Error('the call was never queued')
      await new Promise((r) => setTimeout(r, 200))
    }
    await post('call.no_answer')
    // Within the watchdog's 10 s (RECIPE_TIMEOUT_SECONDS + 5, at least 10): the thread holds; /metrics answers from its last answer.
    await new Promise((r) => setTimeout(r, 3_000))
    expect(await depth()).toBe(1)
  }, 60_000)
})
