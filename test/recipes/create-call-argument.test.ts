import { afterEach, expect, it } from 'vitest'
import { defineRecipe } from '../../src/recipes/define.ts'
import { executeRun } from '../../src/recipes/runner.ts'
import type { CallRequest } from '../../src/upstream/schemas.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

/**
 * A call request a recipe gets wrong through `ctx.client`: a dry run planned it (answered `dry_run`), while the real run
 * threw zod's multi-line issue list, naming neither the method nor the argument. Both now refuse it with the same one
 * line, as the other helpers' ArgumentErrors read. The provider address points nowhere: nothing may be sent.
 */
let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})

const wrong = { agent_id: 'x' } as unknown as CallRequest

const places = (how: 'createCall' | 'createCallRaw') =>
  defineRecipe({
    description: 'places a call with a wrong request',
    async run(ctx) {
      return how === 'createCall' ? await ctx.client.createCall(wrong) : (await ctx.client.createCallRaw(wrong)).call
    },
  })

it('ctx.client.createCall with a wrong request fails the run with one line naming the method and the field, dry run or real', async () => {
  rt = await createTestRuntime({ env: { VOICE_API_KEY: 'sk_test_acme', VOICE_API_BASE_URL: 'http://127.0.0.1:9' } })
  const errors: Array<[string, boolean, string, string | null]> = []
  for (const how of ['createCall', 'createCallRaw'] as const) {
    for (const dryRun of [true, false]) {
      const run = await executeRun(rt, 'wrong-call', places(how), { trigger: { type: 'manual' }, dryRun, timezone: 'UTC' })
      errors.push([how, dryRun, run.status, run.error])
      expect(run.plan).toEqual([])
    }
  }
  const line = (how: string) =>
    expect.stringMatching(new RegExp(`^client\\.${how}\\(request\\): request\\.agent_id: [^\\n]*expected number[^\\n]* — expected \\{ agent_id: integer, parameters: [^\\n]*, got \\{"agent_id":"x"\\}`))
  expect(errors).toEqual([
    ['createCall', true, 'failed', line('createCall')],
    ['createCall', false, 'failed', line('createCall')],
    ['createCallRaw', true, 'failed', line('createCallRaw')],
    ['createCallRaw', false, 'failed', line('createCallRaw')],
  ])
  // The same words in a dry run as in the real run.
  expect(errors[0]![3]).toBe(errors[1]![3])
})
