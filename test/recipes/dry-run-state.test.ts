import { afterEach, expect, it } from 'vitest'
import { defineRecipe } from '../../src/recipes/define.ts'
import { renderPlan } from '../../src/recipes/present.ts'
import { executeRun } from '../../src/recipes/runner.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { createManualClock } from '../../src/utils/clock.ts'

/**
 * A dry run never writes the recipe's state: it reads what real runs stored, sees its own writes for the rest of the
 * run, and shows them in its plan — so trying a change (`--dry-run`, `recipes test`) cannot move a real run's cursor.
 */
describeEachDialect('ctx.state in a dry run', (dialect) => {
  let rt: TestRuntime | undefined
  afterEach(async () => {
    await rt?.close()
    rt = undefined
  })

  // A cursor recipe: works from where the last run stopped, then moves the cursor on and forgets a scratch key.
  const cursor = defineRecipe({
    description: 'reads what arrived since its last run',
    async run(ctx) {
      const since = (await ctx.state.get<number>('since')) ?? 0
      await ctx.state.set('since', ctx.now.getTime())
      await ctx.state.set('scratch', { n: 1 })
      await ctx.state.delete('scratch')
      return { since, seen_own_write: await ctx.state.get<number>('since'), scratch: (await ctx.state.get('scratch')) ?? null }
    },
  })
  const run = (dryRun: boolean) => executeRun(rt!, 'cursor', cursor, { trigger: { type: 'manual' }, dryRun, timezone: 'UTC' })

  it('reads what real runs stored, sees its own writes, shows them in its plan, and leaves the stored state as it was', async () => {
    const clock = createManualClock()
    rt = await createTestRuntime({ dialect, clock })
    const first = await run(false)
    expect(first.summary).toMatchObject({ since: 0, scratch: null })
    const stored = first.startedAt
    await clock.advance(60_000)

    const dry = await run(true)
    expect(dry.status).toBe('succeeded')
    expect(dry.summary).toEqual({ since: stored, seen_own_write: dry.startedAt, scratch: null })
    expect(dry.plan).toEqual([
      { kind: 'state', action: 'set', key: 'since', value: String(dry.startedAt) },
      { kind: 'state', action: 'set', key: 'scratch', value: '{"n":1}' },
      { kind: 'state', action: 'delete', key: 'scratch' },
    ])
    expect(renderPlan(dry.plan)).toContain(`state "since" = ${dry.startedAt} (kept for this dry run only)`)
    await clock.advance(60_000)

    // The next real run starts where the last real run stopped, not where the dry run would have.
    const next = await run(false)
    expect(next.summary).toMatchObject({ since: stored })
    expect(next.plan).toEqual([])
  })
})
