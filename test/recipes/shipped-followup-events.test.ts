import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, expect, it } from 'vitest'
import { createRecipeEngine, type RecipeEngine } from '../../src/recipes/engine.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { tempRecipesDir } from './helpers.ts'

/**
 * The shipped `no-answer-followup` with `TECHNICAL_FAILURES = true` follows up technical failures "sooner" (10 minutes
 * after), but ran only on no_answer and busy events: a failed call waited for the 30-minute sweep.
 */
let rt: TestRuntime | undefined
let engine: RecipeEngine | undefined
const folder = tempRecipesDir()
afterAll(() => folder.cleanup())
afterEach(async () => {
  await engine?.stop()
  await rt?.close()
  engine = rt = undefined
})

const SHIPPED = readFileSync(join(import.meta.dirname, '../../recipes/no-answer-followup.ts'), 'utf8')

it("the shipped follow-up recipe runs on technical failures' events when it follows them up, and not otherwise", async () => {
  expect(SHIPPED).toContain('const TECHNICAL_FAILURES = false\n')
  folder.write('as-shipped', SHIPPED)
  folder.write('with-technical', SHIPPED.replace('const TECHNICAL_FAILURES = false\n', 'const TECHNICAL_FAILURES = true\n'))
  rt = await createTestRuntime({ env: { RECIPES_DIR: folder.dir } })
  engine = createRecipeEngine(rt)
  const listed = Object.fromEntries((await engine.list()).map((r) => [r.name, [r.broken, r.on]]))
  expect(listed).toEqual({
    'as-shipped': [null, ['call.no_answer', 'call.busy']],
    'with-technical': [null, ['call.no_answer', 'call.busy', 'call.failed', 'call.socket_failure', 'call.telephony_failed']],
  })
})
