import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { main } from '../../src/cli.ts'
import { testRecipe } from '../../src/index.ts'
import { tempRecipesDir } from './helpers.ts'

/**
 * `recipes check` and `recipes test` give the service's verdict: `check` exits 1 for a file the loader refuses
 * even when it type-checks, and `test` refuses a recipe with a type error (as `recipes run --dry-run` does, exit 2)
 * instead of reporting a run the service would never make.
 */
const HEALTHY = `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'fine', schedule: '0 8 * * *', run: () => 'ok' })
`
/** Each of these type-checks; only the loader refuses them. */
const REFUSED_BY_THE_LOADER: Record<string, string> = {
  'bad-hour': `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'x', schedule: '0 25 * * *', run: () => 1 })
`,
  'bad-zone': `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'x', schedule: '0 8 * * *', timezone: 'Europe/Londn', run: () => 1 })
`,
  'no-export': `export const nothing = 1
`,
  'null-export': `export default null
`,
  // It ended the command without a line (exit 0 here; the processing thread, so serve did not start).
  'exits': `import { defineRecipe } from 'switchboard'
process.exit(0)
export default defineRecipe({ description: 'x', on: ['call.busy'], run: () => 1 })
`,
  // No excess-property check on a variable: only the loader sees \`timeZone\`.
  'wrong-key': `import { defineRecipe } from 'switchboard'
const def = { description: 'morning', schedule: '0 8 * * *', timeZone: 'Europe/London', run: () => 1 }
export default defineRecipe(def)
`,
  'two words': HEALTHY,
}
/** A type error that would not fail at run time: only the type check can tell. */
const TYPE_ERROR = `import { defineRecipe } from 'switchboard'

export default defineRecipe({
  description: 'returns a string typed as a number',
  run() {
    const n: number = 'not a number'
    return n
  },
})
`

let dataDir: string
beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'sb-verdicts-'))
})
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

async function cli(recipesDir: string, argv: string[], env: Record<string, string> = {}) {
  let out = ''
  let err = ''
  const code = await main(argv, {
    env: { DATA_DIR: dataDir, RECIPES_DIR: recipesDir, LOG_LEVEL: 'silent', WEBHOOK_SECRET: 'whsec_x', VOICE_API_KEY: 'sk_test_acme', VOICE_API_BASE_URL: 'http://127.0.0.1:9', ...env },
    stdout: (t) => void (out += t),
    stderr: (t) => void (err += t),
  })
  return { code, out, err }
}

describe('recipes check', () => {
  const folder = tempRecipesDir()
  afterAll(() => folder.cleanup())
  const files: Record<string, string> = {}
  beforeAll(() => {
    files.healthy = folder.write('healthy', HEALTHY)
    for (const [name, source] of Object.entries(REFUSED_BY_THE_LOADER)) files[name] = folder.write(name, source)
    // The recipe's own vitest files beside it: tests, not recipes (nor broken ones).
    folder.write('healthy.test', `import { it } from 'vitest'\nit('runs', () => {})\n`)
    folder.write('healthy.spec', `import { it } from 'vitest'\nit('runs', () => {})\n`)
  })

  it('reports what the loader refuses, with its reason, and exits 1 although nothing has a type error', async () => {
    const text = await cli(folder.dir, ['recipes', 'check'])
    expect(text.err).toBe('')
    expect(text.code).toBe(1)
    const lines = text.out.trimEnd().split('\n')
    expect(lines).toEqual([
      expect.stringMatching(/bad-hour\.ts: broken: `schedule` "0 25 \* \* \*" is not a valid cron pattern/),
      expect.stringMatching(/bad-zone\.ts: broken: `timezone` must be an IANA time zone such as Asia\/Kolkata \(got "Europe\/Londn"\)$/),
      expect.stringMatching(/exits\.ts: broken: failed to load: its top-level code calls process\.exit\(0\) while the file loads: a recipe must not end the process \(do the work in run\(\), or throw\) \(at .*exits\.ts:2:9\)$/),
      expect.stringMatching(/no-export\.ts: broken: no recipe exported/),
      expect.stringMatching(/null-export\.ts: broken: no recipe exported/),
      expect.stringMatching(/two words\.ts: broken: file name must use letters, digits, "-" or "_" only \(and start with a letter or digit\)$/),
      expect.stringMatching(/wrong-key\.ts: broken: unknown key `timeZone`: did you mean `timezone`\?/),
      '7 recipes the service would not load',
    ])

    const json = await cli(folder.dir, ['recipes', 'check', '--json'])
    expect(json.code).toBe(1)
    const parsed = JSON.parse(json.out) as { errors: unknown[]; broken: Array<{ recipe: string; file: string; reason: string }> }
    expect(parsed.errors).toEqual([])
    expect(parsed.broken.map((b) => [b.recipe, b.file])).toEqual(
      ['bad-hour', 'bad-zone', 'exits', 'no-export', 'null-export', 'two words', 'wrong-key'].map((name) => [name, files[name]]),
    )
    expect(parsed.broken.find((b) => b.recipe === 'bad-hour')?.reason).toMatch(/^`schedule` "0 25 \* \* \*" is not a valid cron pattern/)
  }, 120_000)

  it('checks one recipe by name: the loader\'s verdict included', async () => {
    expect(await cli(folder.dir, ['recipes', 'check', 'healthy'])).toMatchObject({ code: 0, out: '1 recipe checked: no type errors\n' })
    const one = await cli(folder.dir, ['recipes', 'check', 'bad-zone'])
    expect(one.code).toBe(1)
    expect(one.out).toMatch(/bad-zone\.ts: broken: `timezone` must be an IANA time zone .*\n1 recipe the service would not load\n$/)
    // A helper (`_` first) named as a recipe is told it is a helper: "must use letters, digits, - or _" read as wrong.
    folder.write('_shared', HEALTHY)
    const helper = await cli(folder.dir, ['recipes', 'check', '_shared'])
    expect(helper.code).toBe(1)
    expect(helper.out).toMatch(/_shared\.ts: broken: a file name starting with "_" is a helper recipes import, not a recipe: the service does not load it \(rename it without the "_" to make it one\)\n/)
  }, 120_000)
})

describe('recipes test', () => {
  const folder = tempRecipesDir()
  afterAll(() => folder.cleanup())
  let file: string
  beforeAll(() => {
    file = folder.write('typed-wrong', TYPE_ERROR)
  })

  it('refuses a recipe with a type error as broken, exit 2 like recipes run --dry-run; RECIPES_TYPECHECK=false runs it', async () => {
    const broken = `error: recipe "typed-wrong" is broken: type error at ${file}:6:11 Type 'string' is not assignable to type 'number'.\n`
    expect(await cli(folder.dir, ['recipes', 'test', 'typed-wrong'])).toMatchObject({ code: 2, out: '', err: broken })
    // The service's own answer for the same file: the same reason, the same exit code.
    expect(await cli(folder.dir, ['recipes', 'run', 'typed-wrong', '--dry-run'], { RECIPES_TYPECHECK: 'true' })).toMatchObject({ code: 2, out: '', err: broken })
    await expect(testRecipe({ recipe: file, env: { LOG_LEVEL: 'silent' } })).rejects.toThrow(`recipe "typed-wrong" is broken: type error at ${file}:6:11 `)

    const unchecked = await cli(folder.dir, ['recipes', 'test', 'typed-wrong'], { RECIPES_TYPECHECK: 'false' })
    expect(unchecked).toMatchObject({ code: 0, err: '' })
    expect(unchecked.out).toMatch(/^recipe typed-wrong: succeeded/)
  }, 120_000)
})

describe('a type error in a helper the recipe imports', () => {
  const folder = tempRecipesDir()
  afterAll(() => folder.cleanup())
  let helper: string
  beforeAll(() => {
    helper = folder.write('lib/helper', `// a helper with a type error\nexport function double(n: number): number {\n  const s: string = n\n  return s.length * 2\n}\n`)
    folder.write('uses-helper', `import { defineRecipe } from 'switchboard'\nimport { double } from './lib/helper.ts'\n\nexport default defineRecipe({ description: 'imports a broken helper', run: () => ({ doubled: double(21) }) })\n`)
    folder.write('no-helper', HEALTHY)
  })

  it('breaks the recipes that import it, in the service and in recipes test, as recipes check says; the others run', async () => {
    const broken = `error: recipe "uses-helper" is broken: type error at ${helper}:3:9 Type 'number' is not assignable to type 'string'.\n`
    expect(await cli(folder.dir, ['recipes', 'test', 'uses-helper'])).toMatchObject({ code: 2, out: '', err: broken })
    expect(await cli(folder.dir, ['recipes', 'run', 'uses-helper', '--dry-run'], { RECIPES_TYPECHECK: 'true' })).toMatchObject({ code: 2, out: '', err: broken })
    expect((await cli(folder.dir, ['recipes', 'run', 'no-helper', '--dry-run'], { RECIPES_TYPECHECK: 'true' })).code).toBe(0)
    const check = await cli(folder.dir, ['recipes', 'check'])
    expect(check.code).toBe(1)
    expect(check.out + check.err).toContain(`${helper}:3:9`)
  }, 120_000)
})
