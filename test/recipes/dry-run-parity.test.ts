import { writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import { expect, it } from 'vitest'
import { createRecipeEngine } from '../../src/recipes/engine.ts'
import type { RecipeRun } from '../../src/recipes/runner.ts'
import { createTestRuntime } from '../helpers/runtime.ts'
import { oneBodyRecipe } from './one-body-recipe.ts'

/** A dry run answers as the real run would within the run: what the real run refuses or de-duplicates, so does the plan. */
const h = oneBodyRecipe()

/** The dry run first (it must leave nothing behind), then the real run, of the same body. */
async function both(body: string): Promise<{ dry: RecipeRun; real: RecipeRun }> {
  const dry = await h.run(body, true)
  const real = await h.run(body, false)
  return { dry, real }
}

/** The run's error without where in the recipe it was thrown (` (at r.ts:2:5)`). */
const errorOf = (run: RecipeRun): string | null => run.error?.replace(/ \(at [^()]*\)$/, '') ?? null

async function seedNoAnswer(id: string, phone: string): Promise<void> {
  const ended = h.rt.clock.now() - 3_600_000
  await h.rt.store.db.insertInto('conversations').values({
    conversation_id: id, agent_id: 101, contact_number: phone, status: 'no_answer', terminal: 1, duration_seconds: 0,
    started_at: ended - 1000, ended_at: ended, failure_reason: null, trace_id: `tr_${id}`, from_phone: null, recording_url: null,
    transcript: null, results: null, call_parameters: JSON.stringify({ customer_phone: phone }),
    retry: null, retry_context: null, last_event_at: ended, last_event_id: null, source: 'webhook', created_at: ended, updated_at: ended,
  }).execute()
}

it('an idempotency key used twice in one run: the dry run plans one call and answers duplicate, as the real run does', async () => {
  const body = `const call = { agentId: 101, phone: '+442079460301', idempotencyKey: 'same-key' }
    const one = await ctx.campaigns.scheduleCall(call)
    const two = await ctx.campaigns.scheduleCall(call)
    const many = await ctx.campaigns.scheduleCalls([{ ...call, idempotencyKey: 'k2' }, { ...call, idempotencyKey: 'k2' }])
    return [one.status, two.status, ...many.map((o) => o.status)].join(' ')`
  const { dry, real } = await both(body)
  expect(real.summary).toBe('queued duplicate queued duplicate')
  expect(dry.summary).toBe('planned duplicate planned duplicate')
  expect(dry.plan.filter((p) => p.kind === 'call')).toHaveLength(2)
  expect(real.plan.filter((p) => p.kind === 'call')).toHaveLength(2)
})

it('runFollowUps twice in one run: the dry run plans each follow-up once, as the real run does', async () => {
  await seedNoAnswer('c1', '+919876543215')
  const body = `const first = await ctx.campaigns.runFollowUps({ conversationIds: ['c1'] })
    const second = await ctx.campaigns.runFollowUps({ conversationIds: ['c1'] })
    const sweep = await ctx.campaigns.runFollowUps()
    return { first: first.summary, second: second.summary, sweep: sweep.summary, codes: second.skips.map((s) => s.code) }`
  const { dry, real } = await both(body)
  expect(real.summary).toMatchObject({ first: { queued: 1 }, second: { queued: 0, skipped: 1 }, sweep: { queued: 0, skipped: 0 }, codes: ['already_followed_up'] })
  expect(dry.summary).toMatchObject({ first: { planned: 1 }, second: { planned: 0, duplicates: 0, skipped: 1 }, sweep: { planned: 0, duplicates: 0, skipped: 0 }, codes: ['already_followed_up'] })
  expect(dry.plan.filter((p) => p.kind === 'call')).toHaveLength(1)
})

it('sendDailyReport with no recipient: refused in the dry run as in the real run, with what a recipe can do', async () => {
  const { dry, real } = await both(`await ctx.reports.sendDailyReport({})`)
  const message = 'ctx.reports.sendDailyReport(options): no recipient for the daily report: set REPORT_TO or pass { to } to ctx.reports.sendDailyReport'
  expect(errorOf(real)).toBe(message)
  expect(errorOf(dry)).toBe(message)
  expect(dry.plan).toEqual([])
  expect((await h.run(`return (await ctx.reports.sendDailyReport({ to: 'ops@example.com' })).to`, true)).summary).toEqual(['ops@example.com'])
})

it('a batch past the sandbox’s 10,000 rows: the dry run refuses it as the real run does, naming the function', async () => {
  const body = `const rows = Array.from({ length: 10_001 }, (_, i) => ({ customer_phone: '+91987' + String(i).padStart(7, '0') }))
    await ctx.campaigns.launchBatch({ agentId: 101, name: 'x', rows, window: false })`
  const { dry, real } = await both(body)
  const message = 'ctx.campaigns.launchBatch(input): batch has 10001 rows to upload; the sandbox takes at most 10000 per batch: launch the rows in several batches'
  expect(errorOf(dry)).toBe(message)
  expect(errorOf(real)).toBe(message)
  expect(dry.plan).toEqual([])
})

it('addToDnc: the dry run refuses what the real run refuses, and its isBlocked sees the numbers the run added', async () => {
  const refused = await both(`await ctx.campaigns.addToDnc('hello')`)
  expect(errorOf(refused.real)).toBe('cannot add "hello" to the do-not-call list: not a phone number (contains letters)')
  expect(errorOf(refused.dry)).toBe(errorOf(refused.real))
  const unknownKey = await both(`await ctx.campaigns.addToDnc('+919876543219', { reason: 'asked', bogus: 1 } as never)`)
  expect(errorOf(unknownKey.dry)).toMatch(/^ctx\.campaigns\.addToDnc\(details\): .*bogus/)
  expect(errorOf(unknownKey.real)).toBe(errorOf(unknownKey.dry))
  const body = `const before = await ctx.campaigns.isBlocked('98765 43219')
    const first = await ctx.campaigns.addToDnc('+91 98765 43219', { reason: 'asked by email' })
    const again = await ctx.campaigns.addToDnc('+919876543219')
    const list = await ctx.campaigns.loadDncList()
    const call = await ctx.campaigns.scheduleCall({ agentId: 101, phone: '+919876543210' })
    return { before, first: first.added, again: again.added, after: await ctx.campaigns.isBlocked('98765 43219'), listed: list.has('+919876543219'), other: await ctx.campaigns.isBlocked('+919876543210'), call: call.status }`
  const { dry, real } = await both(body)
  expect(real.summary).toEqual({ before: false, first: true, again: false, after: true, listed: true, other: false, call: 'queued' })
  expect(dry.summary).toEqual({ ...(real.summary as object), call: 'planned' })
})

it('a batch for an agent the provider does not know: the real run’s error names the function and the agent id', async () => {
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      res.statusCode = 404
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ error: { message: 'agent not found', type: 'not_found' } }))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const own = await createTestRuntime({ env: { RECIPES_DIR: h.folder.dir, VOICE_API_KEY: 'sk_test_acme', VOICE_API_BASE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}` } })
  try {
    h.folder.write('r', `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'x', async run(ctx) { await ctx.campaigns.launchBatch({ agentId: 999999, name: 'x', rows: [{ customer_phone: '+919876543210' }], window: false }) } })\n`)
    const real = await createRecipeEngine(own).run('r', { dryRun: false })
    expect(errorOf(real)).toMatch(/^ctx\.campaigns\.launchBatch\(input\): input\.agentId: the provider has no agent 999999 \(.*agent not found/)
  } finally {
    await own.close()
    await new Promise((resolve) => server.close(resolve))
  }
})

it('addToDnc and removeFromDnc: the dry run’s scheduleCall, launchBatch, prepareBatch, isBlocked and loadDncList see them as the real run’s do, and its plan lists them', async () => {
  writeFileSync(join(h.folder.dir, 'contacts.csv'), 'customer_phone\n+919876543221\n+919876543222\n')
  const body = `const n = '+919876543221'
    const added = await ctx.campaigns.addToDnc(n, { reason: 'asked' })
    const call = await ctx.campaigns.scheduleCall({ agentId: 101, phone: n, idempotencyKey: 'k-while-listed' })
    // Its one row on the list: nothing is uploaded (this test has no provider to take a batch).
    const batch = await ctx.campaigns.launchBatch({ agentId: 101, name: 'b', rows: [{ customer_phone: n }], window: false })
    const prepared = await ctx.campaigns.prepareBatch(${JSON.stringify(`${h.folder.dir}/contacts.csv`)})
    const removed = await ctx.campaigns.removeFromDnc('98765 43221')
    const removedAgain = await ctx.campaigns.removeFromDnc(n)
    const call2 = await ctx.campaigns.scheduleCall({ agentId: 101, phone: n, idempotencyKey: 'k-after-removal' })
    return { added: added.added, call: call.status, batch: [batch.rows.length, batch.rejects.map((r) => r.reason).join()], preparedBlocked: prepared.stats.blocked, removed, removedAgain,
      after: await ctx.campaigns.isBlocked(n), listed: (await ctx.campaigns.loadDncList()).has(n), call2: call2.status }`
  const { dry, real } = await both(body)
  expect(real.summary).toEqual({ added: true, call: 'blocked', batch: [0, 'on the do-not-call list'], preparedBlocked: 1, removed: true, removedAgain: false, after: false, listed: false, call2: 'queued' })
  expect(dry.summary).toEqual({ ...(real.summary as object), call2: 'planned' })
  const changes = [{ kind: 'dnc', action: 'add', phone: '+919876543221', reason: 'asked' }, { kind: 'dnc', action: 'remove', phone: '+919876543221' }]
  expect(dry.plan.filter((p) => p.kind === 'dnc')).toEqual(changes)
  expect(real.plan.filter((p) => p.kind === 'dnc')).toEqual(changes)
  expect(await h.rt.store.db.selectFrom('dnc').selectAll().execute()).toEqual([])
})

it('runFollowUps after addToDnc: the dry run blocks the follow-up as the real run does', async () => {
  await seedNoAnswer('c2', '+919876543216')
  const body = `await ctx.campaigns.addToDnc('+919876543216')
    const { summary } = await ctx.campaigns.runFollowUps({ conversationIds: ['c2'] })
    return { planned: summary.planned + summary.queued, blocked: summary.blocked, skipped: summary.skipped }`
  const { dry, real } = await both(body)
  expect(real.summary).toEqual({ planned: 0, blocked: 0, skipped: 1 })
  expect(dry.summary).toEqual(real.summary)
})

it('a key a real run used (within 24 h) is a duplicate in a later dry run too, as in a later real run', async () => {
  const body = `const first = await ctx.campaigns.scheduleCall({ agentId: 101, phone: '+919876543212', idempotencyKey: 'welcome-+919876543212' })
    const other = await ctx.campaigns.scheduleCall({ agentId: 101, phone: '+919876543213' })
    return [first.status, other.status].join(' ')`
  expect((await h.run(body, false)).summary).toBe('queued queued')
  const dry = await h.run(body, true)
  const real = await h.run(body, false)
  expect(real.summary).toBe('duplicate queued')
  expect(dry.summary).toBe('duplicate planned')
  expect(dry.plan.filter((p) => p.kind === 'call')).toHaveLength(1)
})

// Without `await`, the call went out after the run was recorded with nothing planned; `recipes test` showed it planned.
it('a call the recipe does not await happens within its run: the record holds it, dry or real', async () => {
  const body = `void ctx.campaigns.scheduleCall({ agentId: 101, phone: '+919876543214', idempotencyKey: 'no-await' })
    return 'done'`
  const { dry, real } = await both(body)
  expect(real.status).toBe('succeeded')
  expect(real.plan.filter((p) => p.kind === 'call')).toHaveLength(1)
  expect(dry.plan.filter((p) => p.kind === 'call')).toHaveLength(1)
  const recorded = await h.rt.store.db.selectFrom('recipe_runs').select(['plan', 'ended_at']).where('id', '=', real.id).executeTakeFirstOrThrow()
  expect(JSON.parse(recorded.plan!)).toHaveLength(1)
  const queued = await h.rt.store.db.selectFrom('calls').select(['created_at']).where('idempotency_key', '=', 'no-await').executeTakeFirstOrThrow()
  expect(Number(queued.created_at)).toBeLessThanOrEqual(Number(recorded.ended_at))
})

// A refused follow-up was re-queued by every sweep (the same 400 each time, 7 days long, on the key's rate limit).
it('a follow-up the provider refused is not planned again, by the sweep or by its conversation', async () => {
  await seedNoAnswer('c9', '+919876543217')
  const at = h.rt.clock.now()
  await h.rt.store.db.insertInto('calls').values({
    id: 'call_refused', tenant: 't', agent_id: 101, customer_phone: '+919876543217', idempotency_key: 'k_refused', trace_id: null, conversation_id: null,
    previous_conversation_id: 'c9', scheduled_for: null, parameters: '[]', retry_context: null, metadata: null, recipe: 'r', campaign: 'agent:101',
    status: 'rejected', error: 'invalid_request: agent has no phone number configured', created_at: at, updated_at: at,
  }).execute()
  const body = `const sweep = await ctx.campaigns.runFollowUps()
    const one = await ctx.campaigns.runFollowUps({ conversationIds: ['c9'] })
    return { sweep: sweep.summary.queued + sweep.summary.planned, one: one.skips.map((s) => s.code)}`
  const { dry, real } = await both(body)
  expect(real.summary).toEqual({ sweep: 0, one: ['refused'] })
  expect(dry.summary).toEqual(real.summary)
})
