import { createServer, type Server } from 'node:http'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { main, type MainOptions } from '../../src/cli.ts'
import { migrate, openStore } from '../../src/db/connect.ts'
import type { PlannedEffect } from '../../src/effects.ts'
import { shippedRecipesDir } from '../helpers/recipes.ts'
import { createManualClock } from '../../src/utils/clock.ts'

/**
 * Each shipped recipe, dry-run through the CLI against a temp DATA_DIR: it prints its plan and makes no
 * call, batch or mail. The provider is a local server that counts what it is asked: writes must be zero.
 */
// The shipped recipes by name: recipes a user adds beside them are not part of this test.
const SHIPPED = shippedRecipesDir('daily-report', 'nightly-batch', 'no-answer-followup')
let dataDir: string
let upstream: Server
const requests: string[] = []
let env: Record<string, string>

async function cli(argv: string[], overrides?: MainOptions['overrides']): Promise<{ code: number; out: string; err: string }> {
  let out = ''
  let err = ''
  const code = await main(argv, { env, overrides, stdout: (t) => void (out += t), stderr: (t) => void (err += t) })
  return { code, out, err }
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'sb-dry-'))
  upstream = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`)
    res.writeHead(503, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ error: { message: 'test upstream', type: 'internal_error' } }))
  })
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r))
  const port = (upstream.address() as { port: number }).port
  env = {
    DATA_DIR: dataDir,
    RECIPES_DIR: SHIPPED.dir,
    RECIPES_TIMEZONE: 'Asia/Kolkata',
    REPORT_TO: 'ops@example.com',
    VOICE_API_KEY: 'sk_test_acme',
    VOICE_API_BASE_URL: `http://127.0.0.1:${port}`,
    UPSTREAM_TIMEOUT_MS: '2000',
    WEBHOOK_SECRET: 'whsec_test',
    LOG_LEVEL: 'silent',
  }
  mkdirSync(join(dataDir, 'inbox'), { recursive: true })
  writeFileSync(
    join(dataDir, 'inbox', 'leads.csv'),
    '\uFEFFName,Mobile,City\nAsha,9876543210,Pune\nRavi,+91 98765-43211,Delhi\nDup,09876543210,Pune\nBad,12345,Nowhere\n',
  )
  // A conversation that ended unanswered two hours ago: the follow-up recipe should plan a call for it.
  const store = await openStore(`sqlite:${join(dataDir, 'switchboard.db')}`)
  await migrate(store)
  const ended = Date.now() - 2 * 3_600_000
  await store.db
    .insertInto('conversations')
    .values({
      conversation_id: 'conv_noanswer_1', agent_id: 101, contact_number: '+919876543215', status: 'no_answer', terminal: 1,
      duration_seconds: 0, started_at: ended - 30_000, ended_at: ended, failure_reason: null, trace_id: 'tr_1',
      from_phone: '+918035550101', recording_url: null, transcript: null, results: '{}',
      call_parameters: JSON.stringify({ customer_phone: '+919876543215', name: 'Meera' }), retry: null, retry_context: null,
      last_event_at: ended, last_event_id: 'evt_1', source: 'webhook', created_at: ended, updated_at: ended,
    })
    .execute()
  await store.close()
})

afterAll(async () => {
  await new Promise<void>((r) => upstream.close(() => r()))
  rmSync(dataDir, { recursive: true, force: true })
  SHIPPED.cleanup()
})

async function nothingWasSent() {
  expect(requests.filter((r) => !r.startsWith('GET '))).toEqual([])
  const store = await openStore(`sqlite:${join(dataDir, 'switchboard.db')}`)
  try {
    expect(await store.db.selectFrom('calls').selectAll().execute()).toEqual([])
    expect(await store.db.selectFrom('mail_log').selectAll().execute()).toEqual([])
    const runs = await store.db.selectFrom('recipe_runs').select(['dry_run', 'status']).execute()
    expect(runs.every((r) => Number(r.dry_run) === 1 && r.status === 'succeeded')).toBe(true)
  } finally {
    await store.close()
  }
  expect(existsSync(join(dataDir, 'outbox')) ? readdirSync(join(dataDir, 'outbox')) : []).toEqual([])
}

it('lists the shipped recipes with their triggers', async () => {
  const { code, out } = await cli(['recipes', 'list', '--json'])
  expect(code).toBe(0)
  const list = JSON.parse(out) as Array<{ name: string; schedule: string | null; on: string[]; broken: string | null; next_run: string | null }>
  expect(list.map((r) => r.name)).toEqual(['daily-report', 'nightly-batch', 'no-answer-followup'])
  expect(list.every((r) => r.broken === null)).toBe(true)
  expect(list.find((r) => r.name === 'no-answer-followup')).toMatchObject({ schedule: '*/30 * * * *', on: ['call.no_answer', 'call.busy'] })
  // 08:00 in Asia/Kolkata is 02:30Z.
  expect(list.find((r) => r.name === 'daily-report')!.next_run).toMatch(/T02:30:00\.000Z$/)
  const table = await cli(['recipes', 'list'])
  expect(table.out).toMatch(/no-answer-followup\s+\*\/30 \* \* \* \* \(Asia\/Kolkata\)\s+call\.no_answer, call\.busy\s+\d{4}-/)
  // The file's first command type-checks the three recipes cold (TypeScript's compiler in a thread of its own): a few
  // seconds alone, past 20 s once when the rest of the suite held both cores (CI).
}, 60_000)

it('nightly-batch --dry-run prints each batch row and each reject, and moves nothing', async () => {
  // 11:00 in India, inside the contacts' calling window (outside it, the rows would be held back for later).
  const daytime = { clock: createManualClock('2026-03-19T05:30:00Z') }
  const { code, out, err } = await cli(['recipes', 'run', 'nightly-batch', '--dry-run'], daytime)
  expect(err).toBe('')
  expect(code).toBe(0)
  expect(out).toMatch(/^recipe nightly-batch: succeeded \(dry run: nothing was called, launched or mailed\)/)
  expect(out).toMatch(/batch "leads-\d{4}-\d\d-\d\d" for agent 101: 2 rows, 2 rejected/)
  // The list's name as each call's campaign (the batch's name adds the night).
  expect(out).toContain('{"customer_phone":"+919876543210","Name":"Asha","City":"Pune","campaign":"leads"}')
  expect(out).toContain('{"customer_phone":"+919876543211","Name":"Ravi","City":"Delhi","campaign":"leads"}')
  expect(out).toMatch(/rejected row 4: "09876543210" — duplicate of row 2/)
  expect(out).toMatch(/rejected row 5: "12345" — /)
  const json = JSON.parse((await cli(['recipes', 'run', 'nightly-batch', '--dry-run', '--json'], daytime)).out) as { dry_run: boolean; plan: PlannedEffect[] }
  expect(json.dry_run).toBe(true)
  const batch = json.plan[0] as Extract<PlannedEffect, { kind: 'batch' }>
  expect(batch.rows.map((r) => r.customer_phone)).toEqual(['+919876543210', '+919876543211'])
  expect(batch.rejects.map((r) => [r.row, r.raw])).toEqual([[4, '09876543210'], [5, '12345']])
  expect(batch.rejects.every((r) => r.reason.length > 0)).toBe(true)
  expect(readdirSync(join(dataDir, 'inbox'))).toEqual(['leads.csv'])
  await nothingWasSent()
})

it('no-answer-followup --dry-run plans the follow-up call and places none', async () => {
  const { code, out } = await cli(['recipes', 'run', 'no-answer-followup', '--dry-run', '--json'])
  expect(code).toBe(0)
  const run = JSON.parse(out) as { plan: PlannedEffect[]; summary: unknown }
  expect(run.plan).toHaveLength(1)
  const call = run.plan[0] as Extract<PlannedEffect, { kind: 'call' }>
  expect(call.kind).toBe('call')
  expect(call.request.agent_id).toBe(101)
  expect(call.request.parameters).toContainEqual({ name: 'customer_phone', value: '+919876543215' })
  expect(call.request.conversation_id).toBe('conv_noanswer_1')
  expect(call.request.idempotency_key).toBeTruthy()
  expect(call.recipe).toBe('no-answer-followup')
  expect(run.summary).toMatchObject({ planned: 1, placed: 0 })
  const text = await cli(['recipes', 'run', 'no-answer-followup', '--dry-run'])
  expect(text.out).toMatch(/call \+919876543215 with agent 101 (now|at \S+)/)
  expect(text.out).toMatch(/continues conv_noanswer_1/)
  await nothingWasSent()
})

it('daily-report --dry-run plans the mail to REPORT_TO and sends none', async () => {
  const { code, out } = await cli(['recipes', 'run', 'daily-report', '--dry-run'])
  expect(code).toBe(0)
  expect(out).toMatch(/mail to ops@example\.com: "[^"]+"/)
  await nothingWasSent()
})

it('explains a mistake in one line', async () => {
  expect(await cli(['recipes', 'run'])).toMatchObject({ code: 2, err: expect.stringMatching(/^error: which recipe\?/) })
  const unknown = await cli(['recipes', 'run', 'nope', '--dry-run'])
  expect(unknown.code).toBe(2)
  expect(unknown.err).toBe('error: no recipe named "nope" (recipes: daily-report, nightly-batch, no-answer-followup)\n')
})
