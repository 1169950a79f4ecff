import { expect, it } from 'vitest'
import { oneBodyRecipe } from './one-body-recipe.ts'

/** ctx.destinations.publish checks its arguments as every recipe function does: a typo is refused, not dropped. */
const h = oneBodyRecipe()

const errorOf = async (body: string, dryRun = true) => (await h.run(body, dryRun)).error?.replace(/ \(at [^()]*\)$/, '') ?? null

it('refuses an unknown option naming it (a misspelt idempotencyKey lost the de-duplication)', async () => {
  for (const dryRun of [true, false]) {
    expect(await errorOf(`await ctx.destinations.publish('x.y', {}, { idempotency_key: 'same' } as never)`, dryRun)).toMatch(
      /^ctx\.destinations\.publish\(options\): .*idempotency_key.*idempotency_key: did you mean idempotencyKey\?$/,
    )
  }
  expect(await errorOf(`await ctx.destinations.publish('x.y', {}, { idempotencyKey: 'same', agentId: 101 })`)).toBeNull()
})

it('refuses a missing data object and says a too-long type is too long', async () => {
  expect(await errorOf(`await ctx.destinations.publish('x.y' as never, undefined as never)`)).toMatch(/^ctx\.destinations\.publish\(data\): data: must be an object/)
  expect(await errorOf(`await ctx.destinations.publish('x.y', [1] as never)`)).toMatch(/^ctx\.destinations\.publish\(data\): data: must be an object/)
  const long = await errorOf(`await ctx.destinations.publish('a'.repeat(101), {})`)
  expect(long).toMatch(/^ctx\.destinations\.publish\(type\): type: must be at most 100 characters/)
  expect(long).not.toMatch(/type: must be letters/)
  expect(await errorOf(`await ctx.destinations.publish('a b', {})`)).toMatch(/^ctx\.destinations\.publish\(type\): type: must be letters, digits/)
})
