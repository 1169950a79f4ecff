import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { main } from '../../src/cli.ts'
import { loadRecipeFile } from '../../src/recipes/loader.ts'
import { recipeProblems, validateRecipe } from '../../src/recipes/validate.ts'
import { tempRecipesDir } from './helpers.ts'

/**
 * A recipe file the loader refuses for several reasons is refused for all of them at once: `recipes check` said the
 * first, the author fixed it, ran it again, and only then saw the next — three rounds for three mistakes. The service's
 * own reason (its log line, /admin/recipes, `recipes list`) is the same list, joined.
 */
const KNOWN = '(a recipe takes description, schedule, timezone, on, run)'
const CRON = '`schedule` "0 25 * * *" is not a valid cron pattern'
const ZONE = '`timezone` must be an IANA time zone such as Asia/Kolkata (got "Europe/Londn")'

/** Three mistakes, none of them a type error: the variable escapes TypeScript's excess-property check. */
const THREE_MISTAKES = `import { defineRecipe } from 'switchboard'
const def = { description: 'morning calls', schedule: '0 25 * * *', timezone: 'Europe/Londn', retries: 3, run: () => 1 }
export default defineRecipe(def)
`

let dataDir: string
beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'sb-every-problem-'))
})
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

async function cli(recipesDir: string, argv: string[]) {
  let out = ''
  let err = ''
  const code = await main(argv, {
    env: { DATA_DIR: dataDir, RECIPES_DIR: recipesDir, LOG_LEVEL: 'silent', WEBHOOK_SECRET: 'whsec_x', VOICE_API_KEY: 'sk_test_acme', VOICE_API_BASE_URL: 'http://127.0.0.1:9', SWITCHBOARD_CONFIG: 'none' },
    stdout: (t) => void (out += t),
    stderr: (t) => void (err += t),
  })
  return { code, out, err }
}

describe('recipes check', () => {
  const folder = tempRecipesDir()
  afterAll(() => folder.cleanup())
  let file: string
  beforeAll(() => {
    file = folder.write('three-mistakes', THREE_MISTAKES)
  })

  it('says every reason a file is refused, a line each, and counts the file once', async () => {
    const text = await cli(folder.dir, ['recipes', 'check'])
    expect(text.err).toBe('')
    expect(text.code).toBe(1)
    expect(text.out.trimEnd().split('\n')).toEqual([
      expect.stringMatching(new RegExp(`three-mistakes\\.ts: broken: unknown key \`retries\` \\(a recipe takes .*\\)$`)),
      `${file}: broken: ${ZONE}`,
      expect.stringMatching(new RegExp(`three-mistakes\\.ts: broken: ${CRON.replace(/[*()[\]]/g, '\\$&')}`)),
      '1 recipe the service would not load',
    ])
  }, 120_000)

  it('--json: one broken entry for the file, its reasons listed, and `reason` as the service says it', async () => {
    const json = await cli(folder.dir, ['recipes', 'check', '--json'])
    expect(json.code).toBe(1)
    const { broken } = JSON.parse(json.out) as { broken: Array<{ recipe: string; file: string; reason: string; reasons: string[] }> }
    expect(broken).toHaveLength(1)
    expect(broken[0]!.recipe).toBe('three-mistakes')
    expect(broken[0]!.reasons).toEqual([`unknown key \`retries\` ${KNOWN}`, ZONE, expect.stringContaining(CRON)])
    expect(broken[0]!.reason).toBe(broken[0]!.reasons.join('; '))
  }, 120_000)

  it('the service\'s reason for the file (its log line, /admin/recipes) names all three', async () => {
    const loaded = await loadRecipeFile(file, 'Asia/Kolkata')
    expect(loaded.definition).toBeUndefined()
    expect(loaded.error).toContain('unknown key `retries`')
    expect(loaded.error).toContain(ZONE)
    expect(loaded.error).toContain(CRON)
  })
})

describe('validateRecipe', () => {
  const run = () => 'ok'
  const reason = (value: unknown) => {
    try {
      validateRecipe(value, 'Asia/Kolkata')
      return 'accepted'
    } catch (error) {
      return (error as Error).message
    }
  }

  it('lists every problem, in the order of the keys it checks; validateRecipe throws them joined', () => {
    const value = { description: '', schedule: 'every morning', timezone: 'EST', on: ['call.nope', 'call.no_answer', 'call.naw'], run: 'yes' }
    const problems = recipeProblems(value, 'Asia/Kolkata')
    expect(problems).toEqual([
      '`run` must be a function',
      '`description` must be a non-empty string',
      expect.stringMatching(/^`timezone` "EST" is an abbreviation Intl reads as/),
      expect.stringMatching(/^`schedule` "every morning" is not a valid cron pattern/),
      expect.stringMatching(/^`on` lists unknown event types "call\.nope", "call\.naw" \(known: call\./),
    ])
    expect(reason(value)).toBe(problems.join('; '))
    expect(recipeProblems({ description: 'd', run }, 'UTC')).toEqual([])
  })

  it('judges a schedule in the fallback zone when the recipe\'s own zone is refused: one mistake is one reason', () => {
    expect(reason({ description: 'd', schedule: '0 8 * * *', timezone: 'Europe/Londn', run })).toBe(ZONE)
  })

  it('does not say a misspelt key is also missing: `handler` is one mistake, not two', () => {
    expect(reason({ description: 'd', handler: run })).toBe(`unknown key \`handler\`: did you mean \`run\`? ${KNOWN}`)
    expect(reason({ desc: 'd', run })).toBe(`unknown key \`desc\`: did you mean \`description\`? ${KNOWN}`)
    // A key that is there but wrong is said, beside an unknown one that suggested it.
    expect(reason({ description: 'd', handler: run, run: 1 })).toBe(`unknown key \`handler\`: did you mean \`run\`? ${KNOWN}; \`run\` must be a function`)
  })
})
