import { createServer, type Server } from 'node:http'
import { afterEach, expect, it } from 'vitest'
import { defineRecipe } from '../../src/recipes/define.ts'
import { renderPlan } from '../../src/recipes/present.ts'
import { executeRun } from '../../src/recipes/runner.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { cliEnv, runCli } from '../webhooks/helpers.ts'
import { createManualClock } from '../../src/utils/clock.ts'

/**
 * DESIGN: in a dry run every call, batch and mail is recorded in the plan instead of executed — also a call or a batch
 * a recipe makes straight through `ctx.client` (past the campaign rules): a dry run used to place it for real. Reads
 * still go to the provider. The provider here is a local server that records what it is asked.
 */
let rt: TestRuntime | undefined
let upstream: Server | undefined
afterEach(async () => {
  await rt?.close()
  await new Promise<void>((r) => (upstream ? upstream.close(() => r()) : r()))
  rt = upstream = undefined
})

const direct = defineRecipe({
  description: 'calls and uploads with the provider client',
  async run(ctx) {
    const page = await ctx.client.listConversations({ limit: 1 })
    const call = await ctx.client.createCall({ agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543201' }], scheduled_for: '2026-03-02T10:00:00Z' })
    const raw = await ctx.client.createCallRaw({ agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543202' }] })
    const batch = await ctx.client.createBatch({ agent_id: 101, name: 'spring', file: { data: 'customer_phone,name\n+919876543203,Asha\n+919876543204,Ravi\n', filename: 'spring.csv' } })
    return { listed: page.total, call: [call.status, call.trace_id, call.scheduled_for], raw: raw.call.status, batch: [batch.id, batch.status, batch.total_recipients] }
  },
})

it('a dry run plans the calls and batches a recipe makes through ctx.client, and sends only its reads', async () => {
  const requests: string[] = []
  upstream = createServer((req, res) => {
    requests.push(`${req.method} ${req.url?.split('?')[0]}`)
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ data: [], has_more: false, total: 7 }))
  })
  await new Promise<void>((r) => upstream!.listen(0, '127.0.0.1', r))
  rt = await createTestRuntime({ env: { VOICE_API_KEY: 'sk_test_acme', VOICE_API_BASE_URL: `http://127.0.0.1:${(upstream.address() as { port: number }).port}` } })
  const run = await executeRun(rt, 'direct', direct, { trigger: { type: 'manual' }, dryRun: true, timezone: 'UTC' })
  expect(run.status).toBe('succeeded')
  expect(requests).toEqual(['GET /v1/conversations'])
  expect(run.summary).toEqual({ listed: 7, call: ['dry_run', '', '2026-03-02T10:00:00Z'], raw: 'dry_run', batch: [0, 'dry_run', 2] })
  expect(run.plan.map((p) => p.kind)).toEqual(['call', 'call', 'batch'])
  expect(run.plan[0]).toMatchObject({ kind: 'call', recipe: 'direct', request: { agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543201' }] }, note: expect.stringMatching(/ctx\.client/) })
  expect(run.plan[2]).toEqual({ kind: 'batch', agent_id: 101, name: 'spring', rows: [{ customer_phone: '+919876543203', name: 'Asha' }, { customer_phone: '+919876543204', name: 'Ravi' }], rejects: [] })
  expect(renderPlan(run.plan)).toContain('+919876543201')
})

it('recipes runs lists the recorded runs, newest first, one line each (dry runs marked), and --json without the plans', async () => {
  const clock = createManualClock('2026-03-02T08:00:00Z')
  rt = await createTestRuntime({ clock })
  const ok = defineRecipe({ description: 'fine', run: () => ({ planned: 2, calls: 2 }) })
  const bad = defineRecipe({ description: 'breaks', run: () => { throw new Error('CRM is down') } })
  await executeRun(rt, 'ok', ok, { trigger: { type: 'manual' }, dryRun: false, timezone: 'UTC' })
  await clock.advance(60_000)
  await executeRun(rt, 'bad', bad, { trigger: { type: 'cron', scheduledAt: 0 }, dryRun: false, timezone: 'UTC' })
  await clock.advance(60_000)
  await executeRun(rt, 'ok', ok, { trigger: { type: 'manual' }, dryRun: true, timezone: 'UTC' })
  const env = cliEnv(rt)
  const all = await runCli(['recipes', 'runs'], env)
  expect(all.code).toBe(0)
  const lines = all.out.trimEnd().split('\n')
  expect(lines[0]).toMatch(/^started_at\s+recipe\s+trigger\s+status\s+took\s+summary\s+error$/)
  expect(lines.slice(2).map((l) => l.split(/\s{2,}/).slice(1, 4))).toEqual([
    ['ok', 'manual', 'succeeded (dry run)'],
    ['bad', 'cron', 'failed'],
    ['ok', 'manual', 'succeeded'],
  ])
  expect(all.out).toContain('CRM is down')
  expect(all.out).toContain('planned 2 · calls 2')
  const one = JSON.parse((await runCli(['recipes', 'runs', 'bad', '--json'], env)).out) as Array<Record<string, unknown>>
  expect(one).toEqual([expect.objectContaining({ recipe: 'bad', trigger: 'cron', status: 'failed', planned: 0 })])
  expect(one[0]).not.toHaveProperty('plan')
  expect(await runCli(['recipes', 'runs', '--limit', '0'], env)).toMatchObject({ code: 2, err: 'error: --limit must be from 1 to 10000\n' })
})

it('a misspelt key in a call a recipe makes is refused naming the key it meant, in a real run as in a dry run — nothing is sent', async () => {
  // The proxy passes a caller's extra field on to the provider; in a recipe one is a misspelling: `schedule_for` placed
  // the call at once instead of scheduling it, `retry_languag` went out as written (a recipe author's probe).
  const requests: string[] = []
  upstream = createServer((req, res) => {
    requests.push(`${req.method} ${req.url?.split('?')[0]}`)
    res.writeHead(201, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ data: { agent_id: 101, conversation_id: null, scheduled_for: null, status: 'initiated', trace_id: 't' } }))
  })
  await new Promise<void>((r) => upstream!.listen(0, '127.0.0.1', r))
  rt = await createTestRuntime({ env: { VOICE_API_KEY: 'sk_test_acme', VOICE_API_BASE_URL: `http://127.0.0.1:${(upstream.address() as { port: number }).port}` } })
  const typo = (request: Record<string, unknown>) =>
    defineRecipe({
      description: 'a typo',
      // The misspelling is what is tested: the editor and `recipes check` refuse it too (the request's type is strict).
      run: async (ctx) => ctx.client.createCall({ agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543201' }], ...request } as Parameters<typeof ctx.client.createCall>[0]),
    })
  for (const dryRun of [false, true]) {
    const late = await executeRun(rt, 'typo', typo({ schedule_for: '2026-03-02T10:00:00Z' }), { trigger: { type: 'manual' }, dryRun, timezone: 'UTC' })
    expect(late.status).toBe('failed')
    expect(late.error).toContain('client.createCall(request): request: unknown key "schedule_for" (did you mean "scheduled_for"?)')
    const context = await executeRun(rt, 'typo', typo({ retry_context: { retry_languag: 'hi' } }), { trigger: { type: 'manual' }, dryRun, timezone: 'UTC' })
    expect(context.status).toBe('failed')
    expect(context.error).toContain('request.retry_context: unknown key "retry_languag" (did you mean "retry_language"?)')
  }
  expect(requests).toEqual([])
  // Spelt right, it goes out.
  const right = await executeRun(rt, 'typo', typo({ scheduled_for: '2026-03-02T10:00:00Z', retry_context: { retry_language: 'hi' } }), { trigger: { type: 'manual' }, dryRun: false, timezone: 'UTC' })
  expect(right.status).toBe('succeeded')
  expect(requests).toEqual(['POST /v1/call'])
  // scheduleCall's retryContext too.
  const scheduled = defineRecipe({
    description: 'a typo in a follow-up context',
    run: async (ctx) => ctx.campaigns.scheduleCall({ agentId: 101, phone: '+919876543205', retryContext: { retry_stage: 'pitch' } as Parameters<typeof ctx.campaigns.scheduleCall>[0] extends { retryContext?: infer C } ? C : never }),
  })
  const stage = await executeRun(rt, 'typo', scheduled, { trigger: { type: 'manual' }, dryRun: true, timezone: 'UTC' })
  expect(stage.status).toBe('failed')
  expect(stage.error).toContain('call.retryContext: unknown key "retry_stage" (did you mean "retry_stage_id"?)')
})
