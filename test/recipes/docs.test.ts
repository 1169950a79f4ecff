import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { testRecipe } from '../../src/index.ts'
import { formatDiagnostic, typeCheckFiles } from '../../src/recipes/typecheck.ts'
import { recipeContextMembers } from './api-members.ts'
import { shippedRecipesCopy } from '../helpers/recipes.ts'

/**
 * docs/recipes.md cannot drift from the API: it has a section for every member of `RecipeContext` (read
 * from the types), every member has a doc comment, and every example on the page type-checks and runs —
 * as a recipe written from the page would — in a dry run with the sample events and the sample CSV.
 */
const ROOT = resolve(import.meta.dirname, '../..')
const page = readFileSync(join(ROOT, 'docs/recipes.md'), 'utf8')
const dir = mkdtempSync(join(tmpdir(), 'sb-docs-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

it('has a section for every ctx member, and only for those; every member has a doc comment', () => {
  const members = recipeContextMembers()
  const headings = [...page.matchAll(/^### `(ctx(?:\.\w+)*)`$/gm)].map((m) => m[1]!)
  expect([...headings].sort()).toEqual(members.map((m) => m.path).sort())
  expect(members.filter((m) => !m.doc).map((m) => m.path)).toEqual([])
}, 120_000)

/** Each ```ts block: a whole recipe as it is, or a body of `run(ctx)` wrapped in one (imports hoisted). */
function exampleFiles(): Array<{ file: string; heading: string }> {
  const out: Array<{ file: string; heading: string }> = []
  let heading = '(top)'
  let n = 0
  for (const part of page.split(/^```/m).entries()) {
    const [i, text] = part
    if (i % 2 === 0) {
      const last = [...text.matchAll(/^#{2,3} (.+)$/gm)].pop()
      if (last) heading = last[1]!
      continue
    }
    if (!text.startsWith('ts\n')) continue
    const code = text.slice(3)
    // The vitest example is a test file, not a recipe: its testRecipe call is run below instead.
    if (code.includes("from 'vitest'")) continue
    const lines = code.split('\n')
    const source = code.includes('defineRecipe(')
      ? code
      : [
          ...lines.filter((l) => l.startsWith('import ')),
          "import { defineRecipe } from 'switchboard'",
          `export default defineRecipe({ description: ${JSON.stringify(heading)}, async run(ctx) {`,
          ...lines.filter((l) => !l.startsWith('import ')),
          '} })',
          '',
        ].join('\n')
    const file = join(dir, `example-${String(++n).padStart(2, '0')}.ts`)
    writeFileSync(file, source)
    out.push({ file, heading })
  }
  return out
}

it('every example type-checks and runs in a dry run, as written', async () => {
  const examples = exampleFiles()
  expect(examples.length).toBeGreaterThan(60)
  expect(typeCheckFiles(examples.map((e) => e.file)).map((d) => formatDiagnostic(d))).toEqual([])
  const env = {
    LOG_LEVEL: 'silent', VOICE_API_KEY: 'sk_test_acme', VOICE_API_BASE_URL: 'http://127.0.0.1:9', UPSTREAM_TIMEOUT_MS: '500',
    // No REPORT_TO: the examples run on the defaults a new checkout has (one needed it, and failed there).
    WEBHOOK_SECRET: 'whsec_x', RECIPES_TIMEZONE: 'Asia/Kolkata', DEFAULT_COUNTRY: 'IN',
  }
  const failures: string[] = []
  for (const { file, heading } of examples) {
    const result = await testRecipe({
      recipe: file, env,
      events: join(ROOT, 'data/samples/no-answer-events.json'),
      csv: join(ROOT, 'data/samples/leads.csv'),
    })
    if (result.status !== 'succeeded') failures.push(`${heading}: ${result.error}`)
  }
  expect(failures).toEqual([])
}, 120_000)

it('the vitest example on the page works: testRecipe plans the follow-up of the sample events', async () => {
  const result = await testRecipe({
    // The shipped recipe, copied: the checkout's folder may hold the team's own, broken or not.
    // The page's paths from the test file's folder (recipes/): the shipped folder's copy, and the samples beside it.
    recipe: 'no-answer-followup', recipesDir: shippedRecipesCopy(), events: join(ROOT, 'recipes', '../data/samples/no-answer-events.json'),
    env: { LOG_LEVEL: 'silent', RECIPES_TIMEZONE: 'Asia/Kolkata' },
  })
  expect(result.status).toBe('succeeded')
  expect(result.plan.filter((p) => p.kind === 'call')).not.toHaveLength(0)
})
