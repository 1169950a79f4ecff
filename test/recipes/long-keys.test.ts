import { afterEach, expect, it } from 'vitest'
import { createRecipeEngine } from '../../src/recipes/engine.ts'
import { MAX_STATE_KEY_LENGTH } from '../../src/recipes/state.ts'
import { MAX_IDEMPOTENCY_KEY_LENGTH } from '../../src/upstream/id-limits.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { tempRecipesDir } from './helpers.ts'

/**
 * A state key or a call's idempotency key made of data (`seen:<a URL>`, a row's whole text) of thousands of characters
 * failed the write on Postgres (an index entry past its ~2,700 bytes) and worked on SQLite. Both refuse it alike, with
 * the argument and its limit named; at the limit both store it.
 */
describeEachDialect('a recipe\'s keys past the limit', (dialect) => {
  let rt: TestRuntime | undefined
  let folder: ReturnType<typeof tempRecipesDir> | undefined
  afterEach(async () => {
    await rt?.close()
    folder?.cleanup()
    rt = folder = undefined
  })

  it('are refused with the limit named; at the limit they are stored', async () => {
    folder = tempRecipesDir()
    folder.write('keys', `import { defineRecipe } from 'switchboard'
const text = (n: number) => Array.from({ length: n }, (_, i) => String.fromCharCode(97 + ((i * 7919) % 26))).join('')
export default defineRecipe({
  description: 'keys made of data',
  async run(ctx) {
    const refused: string[] = []
    try { await ctx.state.set(text(${MAX_STATE_KEY_LENGTH + 1}), 1) } catch (error) { refused.push((error as Error).message) }
    try { await ctx.campaigns.scheduleCall({ agentId: 101, phone: '+919876543210', idempotencyKey: text(${MAX_IDEMPOTENCY_KEY_LENGTH + 1}) }) } catch (error) { refused.push((error as Error).message) }
    // A key the X-Idempotency-Key header could not carry (src/upstream/id-limits.ts), as POST /v1/call refuses it.
    try { await ctx.campaigns.scheduleCall({ agentId: 101, phone: '+919876543210', idempotencyKey: 'ключ-1' }) } catch (error) { refused.push((error as Error).message) }
    await ctx.state.set(text(${MAX_STATE_KEY_LENGTH}), 'kept')
    return { refused, kept: await ctx.state.get(text(${MAX_STATE_KEY_LENGTH})) }
  },
})
`)
    rt = await createTestRuntime({ dialect, env: { RECIPES_DIR: folder.dir } })
    const engine = createRecipeEngine(rt)
    try {
      const run = await engine.run('keys')
      expect(run.error).toBeNull()
      expect(run.summary).toEqual({
        refused: [
          expect.stringMatching(new RegExp(`^ctx\\.state\\.set\\(key\\).*must be at most ${MAX_STATE_KEY_LENGTH} characters`)),
          expect.stringMatching(new RegExp(`idempotencyKey: must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`)),
          expect.stringMatching(/idempotencyKey: must be printable ASCII/),
        ],
        kept: 'kept',
      })
    } finally {
      await engine.stop()
    }
  })
})
