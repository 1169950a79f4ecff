import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it, vi } from 'vitest'
import { listRuns } from '../../src/recipes/runner.ts'
import { buildDailyReport } from '../../src/reports/build-report.ts'
import { localDate } from '../../src/reports/day-range.ts'
import { startServer, type RunningServer } from '../../src/server.ts'
import { createSilentLogger } from '../../src/utils/logger.ts'
import { shippedRecipesDir } from '../helpers/recipes.ts'
import { createWarpClock, type WarpClock } from './helpers.ts'

/**
 * Sandbox mode end to end, with the shipped no-answer-followup recipe: a call to a number ending in 5 is
 * not answered; the recipe (fired by the stored webhook) schedules the follow-up at the next opening of
 * the recipient's calling window; when that time comes the sandbox places it and it completes.
 */
// The shipped recipes by name: recipes a user adds beside them are not part of this test.
const SHIPPED = shippedRecipesDir('daily-report', 'nightly-batch', 'no-answer-followup')
// 20:15 in Kolkata: a follow-up one hour later would fall after the 21:00 close.
const START = '2026-01-15T14:45:00Z'
const NEXT_OPENING = Date.parse('2026-01-16T03:30:00Z') // 09:00 IST on the 16th
const PHONE = '+919876543215'

let server: RunningServer
let clock: WarpClock
let dataDir: string

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'sb-e2e-'))
  clock = createWarpClock(START)
  server = await startServer({
    env: {
      PORT: '0', DATA_DIR: dataDir, RECIPES_DIR: SHIPPED.dir, RECIPES_TIMEZONE: 'Asia/Kolkata', RECIPES_TYPECHECK: 'false', SANDBOX_SPEED: '600',
      WEBHOOK_SECRET: 'whsec_e2e_secret', LOG_LEVEL: 'silent', RECONCILE_INTERVAL_SECONDS: '0',
    },
    overrides: { clock, log: createSilentLogger() },
  })
})

afterAll(async () => {
  await server?.close()
  rmSync(dataDir, { recursive: true, force: true })
  SHIPPED.cleanup()
})

it('no_answer → follow-up scheduled at the next window opening → it runs and completes', async () => {
  const db = server.rt.store.db
  const placed = await fetch(`${server.url}/v1/call`, {
    method: 'POST',
    headers: { authorization: 'Bearer sk_test_acme', 'content-type': 'application/json' },
    body: JSON.stringify({ agent_id: 101, parameters: [{ name: 'customer_phone', value: PHONE }, { name: 'name', value: 'Meera' }] }),
  })
  expect(placed.status).toBe(200)
  const first = ((await placed.json()) as { data: { trace_id: string } }).data

  // The webhook arrives, is stored and processed; the recipe's event trigger schedules the follow-up.
  const followUp = await vi.waitFor(
    async () => {
      const row = await db.selectFrom('calls').selectAll().where('recipe', '=', 'no-answer-followup').executeTakeFirst()
      if (!row || row.status === 'pending' || row.status === 'queued') throw new Error('no follow-up accepted by the provider yet')
      return row
    },
    { timeout: 15_000, interval: 50 },
  )
  const noAnswer = await db.selectFrom('conversations').selectAll().where('trace_id', '=', first.trace_id).executeTakeFirstOrThrow()
  expect(noAnswer.status).toBe('no_answer')
  expect(followUp).toMatchObject({ customer_phone: PHONE, agent_id: 101, status: 'scheduled', scheduled_for: NEXT_OPENING, previous_conversation_id: noAnswer.conversation_id })
  const params = JSON.parse(followUp.parameters) as Array<{ name: string; value: string }>
  expect(params).toContainEqual({ name: 'customer_phone', value: PHONE })
  expect(params).toContainEqual({ name: 'name', value: 'Meera' })
  expect(followUp.retry_context).not.toBeNull()
  const runs = await listRuns(server.rt, { recipe: 'no-answer-followup' })
  const eventRun = runs.find((r) => r.trigger === 'event')!
  expect(eventRun).toMatchObject({ status: 'succeeded', dryRun: false })
  expect(eventRun.plan).toHaveLength(1)

  // Overnight: the 30-minute sweeps find it already followed up, and nothing else is called.
  clock.jumpTo(NEXT_OPENING - 60_000)
  await vi.waitFor(async () => expect((await listRuns(server.rt, { recipe: 'no-answer-followup' })).some((r) => r.trigger === 'cron')).toBe(true), { timeout: 10_000, interval: 50 })
  expect(await db.selectFrom('calls').select('id').where('recipe', '=', 'no-answer-followup').execute()).toHaveLength(1)

  // 09:00 in Kolkata: the sandbox places the scheduled follow-up; this time it is answered.
  clock.jumpTo(NEXT_OPENING + 1_000)
  const completed = await vi.waitFor(
    async () => {
      const row = await db
        .selectFrom('conversations')
        .selectAll()
        .where('contact_number', '=', PHONE)
        .where('status', '=', 'completed')
        .executeTakeFirst()
      if (!row) throw new Error('follow-up not completed yet')
      return row
    },
    { timeout: 15_000, interval: 50 },
  )
  expect(completed.started_at).toBeGreaterThanOrEqual(NEXT_OPENING)
  // A completed call plans no further follow-up, on its event or on later sweeps.
  const all = await db.selectFrom('calls').select(['id', 'recipe']).execute()
  expect(all.filter((c) => c.recipe === 'no-answer-followup')).toHaveLength(1)

  // The daily reports count the follow-up with the call it follows: a call placed directly through the proxy, so
  // "(direct)" on both days (not the `agent:101` its attempt cap is grouped by).
  for (const date of ['2026-01-15', '2026-01-16']) {
    const report = await buildDailyReport(server.rt, { date, timezone: 'Asia/Kolkata' })
    expect(report.campaigns.map((c) => c.campaign), date).toEqual(['(direct)'])
  }
})

it('/admin/recipes lists, dry-runs and runs nightly-batch: a batch in the sandbox, the file moved beside its rejects', async () => {
  const { mkdirSync, writeFileSync, readdirSync, readFileSync } = await import('node:fs')
  const inbox = join(dataDir, 'inbox')
  mkdirSync(inbox, { recursive: true })
  writeFileSync(join(inbox, 'leads.csv'), 'name,phone\nAsha,9876543210\nRavi,98765 43211\nBad,555\nAsha again,+919876543210\n')
  // The admin token switchboard generated into DATA_DIR at start-up.
  const admin = { authorization: `Bearer ${readFileSync(join(dataDir, 'admin-token'), 'utf8').trim()}` }
  const list = (await (await fetch(`${server.url}/admin/recipes`, { headers: admin })).json()) as { data: Array<{ name: string; broken: string | null }> }
  expect(list.data.map((r) => [r.name, r.broken])).toEqual([['daily-report', null], ['nightly-batch', null], ['no-answer-followup', null]])

  const dry = await fetch(`${server.url}/admin/recipes/nightly-batch/run?dry_run=1`, { method: 'POST', headers: admin })
  expect(dry.status).toBe(200)
  const dryRun = ((await dry.json()) as { data: { dry_run: boolean; status: string; plan: Array<{ kind: string; rows: unknown[]; rejects: unknown[] }> } }).data
  expect(dryRun).toMatchObject({ dry_run: true, status: 'succeeded' })
  expect(dryRun.plan.map((p) => [p.kind, p.rows.length, p.rejects.length])).toEqual([['batch', 2, 2]])
  expect(readdirSync(inbox)).toEqual(['leads.csv'])

  const live = await fetch(`${server.url}/admin/recipes/nightly-batch/run`, { method: 'POST', body: '{}', headers: admin })
  const run = ((await live.json()) as { data: { status: string; summary: { batches: Array<{ batch_id: number | null; rows: number; rejects: number }> } } }).data
  expect(run.status).toBe('succeeded')
  const summary = run.summary
  expect(summary.batches).toHaveLength(1)
  expect(summary.batches[0]).toMatchObject({ rows: 2, rejects: 2 })
  expect(summary.batches[0]!.batch_id).toEqual(expect.any(Number))
  expect(readdirSync(inbox).sort()).toEqual(['done'])
  expect(readdirSync(join(inbox, 'done')).sort()).toEqual(['leads.csv', 'leads.rejects.csv'])
  const rejects = readFileSync(join(inbox, 'done', 'leads.rejects.csv'), 'utf8')
  expect(rejects).toMatch(/^row,raw,reason/m)
  // Spreadsheet-safe: a cell starting with + is written with a leading apostrophe.
  expect(rejects).toContain("5,'+919876543210,duplicate of row 2")
  // The provider has the batch, with the cleaned rows.
  const batch = await fetch(`${server.url}/v1/batch-calls/${summary.batches[0]!.batch_id}`, { headers: { authorization: 'Bearer sk_test_acme' } })
  expect(batch.status).toBe(200)
  expect(((await batch.json()) as { data: { total_recipients: number } }).data.total_recipients).toBe(2)

  // The sandbox calls both rows; the daily report counts them under the list's campaign, not "(direct)".
  const numbers = ['+919876543210', '+919876543211']
  const ended = await vi.waitFor(
    async () => {
      const rows = await server.rt.store.db.selectFrom('conversations').select(['contact_number', 'ended_at', 'terminal']).where('contact_number', 'in', numbers).execute()
      if (rows.length < 2 || rows.some((r) => !Number(r.terminal))) throw new Error('the batch\'s calls have not all ended yet')
      return rows
    },
    { timeout: 10_000, interval: 50 },
  )
  const day = localDate(Number(ended[0]!.ended_at), 'Asia/Kolkata')
  const report = await buildDailyReport(server.rt, { date: day, timezone: 'Asia/Kolkata' })
  expect(report.conversations.filter((c) => numbers.includes(c.contact_number ?? '')).map((c) => c.campaign)).toEqual(['leads', 'leads'])
  expect(report.campaigns.find((c) => c.campaign === 'leads')?.figures.calls).toBe(2)

  expect((await fetch(`${server.url}/admin/recipes/nope/run`, { method: 'POST', headers: admin })).status).toBe(404)
})
