import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { main } from '../../src/cli.ts'
import { summaryLine } from '../../src/recipes/summary.ts'
import { tempRecipesDir } from './helpers.ts'

/**
 * `recipes test` prints the summary the service would record for the run, not the raw value `run` returned: a
 * value JSON cannot write (a BigInt, a cycle) must not turn a run that succeeded into exit 1.
 */
const folder = tempRecipesDir()
const dataDir = mkdtempSync(join(tmpdir(), 'sb-test-summary-'))
afterAll(() => {
  folder.cleanup()
  rmSync(dataDir, { recursive: true, force: true })
})
folder.write('big', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'returns a BigInt', run: () => 2n ** 70n })
`)
folder.write('cycle', `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'returns an object that refers to itself',
  run() {
    const result: Record<string, unknown> = { calls: 2 }
    result.self = result
    return result
  },
})
`)

async function cli(...argv: string[]) {
  let out = ''
  let err = ''
  const env = { DATA_DIR: dataDir, RECIPES_DIR: folder.dir, LOG_LEVEL: 'silent', WEBHOOK_SECRET: 'whsec_x', RECIPES_TYPECHECK: 'false' }
  const code = await main(argv, { env, stdout: (t) => void (out += t), stderr: (t) => void (err += t) })
  return { code, out, err }
}

it.each(['big', 'cycle'])('%s: succeeds, and prints the summary a dry run of the service records', async (name) => {
  const recorded = await cli('recipes', 'run', name, '--dry-run', '--json')
  expect(recorded).toMatchObject({ code: 0, err: '' })
  const { summary } = JSON.parse(recorded.out) as { summary: unknown }
  expect(summary).not.toBeNull()

  const json = await cli('recipes', 'test', name, '--json')
  expect(json).toMatchObject({ code: 0, err: '' })
  expect(JSON.parse(json.out)).toMatchObject({ recipe: name, status: 'succeeded', summary })

  const text = await cli('recipes', 'test', name)
  expect(text).toMatchObject({ code: 0, err: '' })
  expect(text.out).toMatch(new RegExp(`^recipe ${name}: succeeded`))
  expect(text.out.split('\n')).toContain(`summary: ${summaryLine(summary)}`)
})
