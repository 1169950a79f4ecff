import { afterAll, beforeAll, expect, it } from 'vitest'
import type { H3 } from 'h3'
import { createRecipeEngine, type RecipeEngine } from '../../src/recipes/engine.ts'
import { createApp } from '../../src/server.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { tempRecipesDir } from '../recipes/helpers.ts'
import { TOKEN } from './helpers.ts'

// A recipe's summary holding NUL, ESC or a right-to-left override put the raw bytes into /ui/recipes and the run's
// page: NUL and ESC are not text, and an unmatched U+202E reversed the page text after it.

const recipes = tempRecipesDir()
let rt: TestRuntime
let engine: RecipeEngine
let app: H3
let runId: string

/** Characters no page may carry raw: C0 but tab/LF/CR, DEL, C1, and the bidi embeddings, overrides and isolates. */
const UNSHOWN = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/

beforeAll(async () => {
  recipes.write(
    'odd-text',
    `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'returns text with control characters',
  run: () => ({ note: 'nul\\u0000 esc\\u001b[31m red rtl\\u202Eevil.exe del\\u007f isolate\\u2067x tab\\there <b>&', count: 2 }),
})
`,
  )
  rt = await createTestRuntime({ env: { ADMIN_TOKEN: TOKEN, RECIPES_DIR: recipes.dir } })
  engine = createRecipeEngine(rt)
  await engine.reload()
  const run = await engine.run('odd-text')
  expect(run.status).toBe('succeeded')
  runId = run.id
  app = createApp(rt)
}, 60_000)
afterAll(async () => {
  await engine?.stop()
  await rt?.close()
  recipes.cleanup()
})

const page = async (path: string) => {
  const res = await app.fetch(new Request(`http://localhost${path}`, { headers: { authorization: `Bearer ${TOKEN}` } }))
  expect(res.status, path).toBe(200)
  return res.text()
}

it.each([['/ui/recipes'], ['run']])('%s shows control and bidi-override characters as visible escapes, never raw', async (which) => {
  const text = await page(which === 'run' ? `/ui/recipes/odd-text/runs/${encodeURIComponent(runId)}` : which)
  expect(text).toContain('\\u001b[31m red rtl\\u202eevil.exe del\\u007f isolate\\u2067x')
  expect(text).toContain('nul\\u0000')
  expect(UNSHOWN.exec(text)?.[0]).toBeUndefined()
})

it('a tab stays a tab, and markup is escaped as before', async () => {
  const text = await page(`/ui/recipes/odd-text/runs/${encodeURIComponent(runId)}`)
  expect(text).toContain('isolate\\u2067x tab\there &lt;b&gt;&amp;')
  expect(text).not.toContain('\\u0009')
})

// A chart's labels travel as JSON in data-chart, which the page's script parses: escaped only as the attribute's text,
// "\u202e" was a JSON escape JSON.parse turned back into the character, and the legend read "order.payment_filed".
it('a chart\'s labels reach its legend as visible escapes, after the page\'s JSON.parse too', async () => {
  const { chart } = await import('../../src/ui/components.ts')
  const markup = chart('Events by type', { x: [0], series: [{ label: 'order.\u202edelif_tnemyap', values: [1] }, { label: 'esc\u001b[2J', values: [2] }] }, String).value
  const attribute = /data-chart="([^"]*)"/.exec(markup)![1]!
  // What the browser hands the script: the attribute's text with its character references read.
  const text = attribute.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&')
  const spec = JSON.parse(text) as { series: Array<{ label: string }> }
  expect(spec.series.map((s) => s.label)).toEqual(['order.\\u202edelif_tnemyap', 'esc\\u001b[2J'])
  expect(UNSHOWN.exec(markup)?.[0]).toBeUndefined()
})
