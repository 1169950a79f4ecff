import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest'
import { createRecipeEngine } from '../../src/recipes/engine.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { startRecordingUpstream, type RecordingUpstream } from '../campaigns/recording-upstream.ts'
import { tempRecipesDir } from './helpers.ts'

/**
 * `ctx.campaigns.scheduleCall` follows the campaign rules batches and follow-ups follow: the number
 * becomes E.164 (or the call is rejected with the reason), the do-not-call list is checked, and the time
 * moves into the recipient's calling window.
 */
let upstream: RecordingUpstream
let rt: TestRuntime
let folder: ReturnType<typeof tempRecipesDir>

beforeAll(async () => {
  upstream = await startRecordingUpstream()
})
afterAll(() => upstream.close())

beforeEach(async () => {
  folder = tempRecipesDir()
  // 15:30 IST: inside the window.
  rt = await createTestRuntime({
    clock: createManualClock('2026-03-10T10:00:00Z'),
    env: { RECIPES_DIR: folder.dir, RECIPES_TIMEZONE: 'Asia/Kolkata', VOICE_API_KEY: 'sk_test_acme', VOICE_API_BASE_URL: upstream.url },
  })
  upstream.requests.length = 0
})
afterEach(async () => {
  await rt.close()
  folder.cleanup()
})

const recipe = (body: string) => `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'calls',
  async run(ctx) {
    ${body}
  },
})
`

it('records a national-format number as E.164 and rejects a number that is not one, with the reason', async () => {
  folder.write(
    'direct',
    recipe(`const good = await ctx.campaigns.scheduleCall({ agentId: 101, phone: '98765 43211', parameters: { name: 'Asha' } })
    const bad = await ctx.campaigns.scheduleCall({ agentId: 101, phone: '12345' })
    return { good: good.status, bad: bad.status, reason: 'reason' in bad ? bad.reason : null }`),
  )
  const run = await createRecipeEngine(rt).run('direct')
  expect(run.error).toBeNull()
  expect(run.result).toEqual({ good: 'queued', bad: 'rejected', reason: 'customer_phone "12345": not a valid IN number (wrong number of digits)' })
  const calls = await rt.store.db.selectFrom('calls').select(['customer_phone', 'recipe', 'status']).execute()
  expect(calls).toEqual([{ customer_phone: '+919876543211', recipe: 'direct', status: 'initiated' }])
  expect(upstream.requests).toHaveLength(1)
  const sent = JSON.parse(upstream.requests[0]!.body.toString('utf8')) as { parameters: Array<{ name: string; value: string }> }
  expect(sent.parameters).toEqual([{ name: 'customer_phone', value: '+919876543211' }, { name: 'name', value: 'Asha' }])
})

it('checks the do-not-call list and moves the call into the recipient’s window (same rules as follow-ups)', async () => {
  await rt.store.db.insertInto('dnc').values({ phone: '+919876543212', reason: 'asked', source: 'test', added_at: 0 }).execute()
  folder.write(
    'window',
    recipe(`const blocked = await ctx.campaigns.scheduleCall({ agentId: 101, phone: '09876543212' })
    // 23:00 IST tonight: outside 09:00–21:00, so it moves to 09:00 IST tomorrow.
    const late = await ctx.campaigns.scheduleCall({ agentId: 101, phone: '+91 98765-43213', scheduledFor: '2026-03-10T17:30:00Z' })
    return { blocked: blocked.status, late: late.request.scheduled_for }`),
  )
  const run = await createRecipeEngine(rt).run('window', { dryRun: true })
  expect(run.result).toEqual({ blocked: 'blocked', late: '2026-03-11T03:30:00.000Z' })
  expect(run.plan).toHaveLength(1)
  expect(upstream.requests).toHaveLength(0)
})

it('names the argument and the expected shape when a call is written wrong', async () => {
  folder.write(
    'wrong',
    recipe(`await ctx.campaigns.scheduleCall({ agent_id: 101, customer_phone: '98765 43211' } as never)`),
  )
  const run = await createRecipeEngine(rt).run('wrong', { dryRun: true })
  expect(run.status).toBe('failed')
  expect(run.error).toMatch(/^scheduleCall\(call\): call\.agentId: must be the agent id/)
  expect(run.error).toMatch(/expected \{ agentId: number, phone: string/)
  expect(run.error).toContain('camelCase')
  expect(run.error).not.toMatch(/Cannot read properties/)
})
