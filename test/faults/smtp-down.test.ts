import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { loadConfig } from '../../src/config/load.ts'
import { OUTBOX_POLL_MS, startMailOutbox } from '../../src/reports/index.ts'
import { startServer, type RunningServer } from '../../src/server.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { createSilentLogger } from '../../src/utils/logger.ts'
import { startSmtp } from '../reports/smtp.ts'
import { runCli } from '../webhooks/helpers.ts'
import { printFigures } from './helpers/figures.ts'
import { startTcpGate, type TcpGate } from './helpers/tcp-gate.ts'
import { shippedRecipesCopy } from '../helpers/recipes.ts'

/**
 * Promise: the SMTP relay is down when the daily report is due — from the recipe and from `report send`.
 * The CLI says in one line that the report is queued and exits 0; the report waits in the outbox, visible
 * to the operator (`mail list`, `switchboard_mail_pending`); the running service retries it with backoff
 * (on an injected clock) and sends it exactly once when the relay is back.
 */
const RECIPES = shippedRecipesCopy()

describe('fault: SMTP relay down when the report is due', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-smtp-'))
  let smtp: Awaited<ReturnType<typeof startSmtp>> | undefined
  let gate: TcpGate | undefined
  let server: RunningServer | undefined
  let stopOutbox: (() => Promise<void>) | undefined
  afterAll(async () => {
    await stopOutbox?.()
    await server?.close()
    await gate?.close()
    await smtp?.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('queued by the CLI and the recipe, retried by the service, delivered once when the relay returns', async () => {
    smtp = await startSmtp()
    gate = await startTcpGate(smtp.port)
    await gate.cut()
    const env = {
      DATA_DIR: dataDir,
      DATABASE_URL: `sqlite:${join(dataDir, 'switchboard.db')}`,
      SMTP_URL: `smtp://127.0.0.1:${gate.port}`,
      REPORT_TO: 'ops@example.com',
      MAIL_FROM: 'reports@switchboard.test',
      VOICE_API_KEY: 'sk_fault_mail',
      VOICE_API_BASE_URL: 'http://127.0.0.1:9',
      RECIPES_DIR: RECIPES,
      RECIPES_TIMEZONE: 'UTC',
      RECONCILE_INTERVAL_SECONDS: '0',
      WEBHOOK_SECRET: 'whsec_fault_mail',
      LOG_LEVEL: 'silent',
    }

    // The service's database, as a start (or `migrate`) leaves it: `report send` reads the day from it.
    expect((await runCli(['migrate'], env)).code).toBe(0)
    const cli = await runCli(['report', 'send', '--date', '2026-11-20'], env)
    expect(cli.code, cli.err).toBe(0)
    expect(cli.out.trim().split('\n')).toHaveLength(1)
    expect(cli.out).toMatch(/^queued: the SMTP relay did not take the report \(.*ECONNREFUSED.*\); it waits in the outbox/)
    const recipe = await runCli(['recipes', 'run', 'daily-report', '--json'], env)
    expect(recipe.code, recipe.err + recipe.out).toBe(0)
    expect((JSON.parse(recipe.out) as { summary: Record<string, unknown> }).summary).toMatchObject({ status: 'queued', mailed: false, next_attempt_at: expect.stringMatching(/^\d{4}-/) })

    const listed = await runCli(['mail', 'list', '--status', 'queued', '--json'], env)
    const queued = JSON.parse(listed.out) as Array<{ id: string; attempts: number; next_attempt_at: string }>
    expect(queued).toHaveLength(2)
    expect(queued.every((m) => m.attempts === 1 && Date.parse(m.next_attempt_at) > Date.now())).toBe(true)

    // The running service, with its own (manual) clock.
    const clock = createManualClock(Date.now())
    const config = loadConfig({ env: { ...env, PORT: '0' } })
    server = await startServer({ config, background: false, overrides: { clock, log: createSilentLogger() } })
    const rt = server.rt
    stopOutbox = startMailOutbox(rt)
    const metric = async (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(await (await fetch(`${server!.url}/metrics`)).text())?.[1])
    expect(await metric('switchboard_mail_pending')).toBe(2)
    const attempts = async () => (await rt.store.db.selectFrom('mail_log').select(['attempts', 'status']).execute()).map((r) => `${r.status}/${r.attempts}`)

    /**
     * One outbox pass: the clock moves to the next poll, then the pass's real I/O finishes — no message claimed (a
     * send in flight renews its claim on a timer of its own) and the next poll the one timer waiting.
     */
    const claimed = async () => (await rt.store.db.selectFrom('mail_log').select('id').where('claimed_by', 'is not', null).execute()).length
    const passDone = async () => {
      expect(await claimed()).toBe(0)
      expect(clock.pending()).toBe(1)
    }
    const pass = async () => {
      await clock.advance(OUTBOX_POLL_MS)
      await vi.waitFor(passDone, { timeout: 10_000, interval: 10 })
    }
    // Relay still down: the first retry falls due 30 s after the first attempt and fails again.
    await clock.advance(1_000)
    await vi.waitFor(passDone, { timeout: 10_000, interval: 10 })
    for (let i = 0; i < 3; i++) await pass()
    expect(await attempts()).toEqual(['queued/2', 'queued/2'])
    expect(smtp.messages).toHaveLength(0)

    await gate.restore()
    const restoredAt = clock.now()
    let deliveredAt = 0
    for (let i = 0; i < 20 && deliveredAt === 0; i++) {
      await pass()
      if ((await attempts()).every((a) => a.startsWith('sent/'))) deliveredAt = clock.now()
    }
    expect(deliveredAt).toBeGreaterThan(0)
    // Long after: still exactly one copy of each.
    for (let i = 0; i < 8; i++) await pass()
    await vi.waitFor(() => expect(smtp!.messages).toHaveLength(2), { timeout: 5_000 })
    const subjects = smtp.messages.map((m) => m.subject)
    expect(new Set(smtp.messages.map((m) => m.messageId)).size).toBe(2)
    expect(await metric('switchboard_mail_pending')).toBe(0)
    const rows = await rt.store.db.selectFrom('mail_log').select(['status', 'raw']).execute()
    expect(rows.every((r) => r.status === 'sent' && r.raw === null)).toBe(true)

    printFigures('smtp relay down', {
      sent: 2,
      acknowledged: 2,
      stored: 2,
      processed: smtp.messages.length,
      duplicates: smtp.messages.length - 2,
      lost: 2 - smtp.messages.length,
      recoverySeconds: (deliveredAt - restoredAt) / 1000,
      extra: { 'attempts while down': 2, 'clock': 'manual (backoff 30 s, 60 s, … polled every 15 s)', subjects: subjects.length },
    })
  }, 60_000)
})
