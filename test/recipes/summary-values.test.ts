import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/load.ts'
import { createRecipeEngine, type RecipeEngine } from '../../src/recipes/engine.ts'
import { listRuns } from '../../src/recipes/runner.ts'
import { DEEPER_OMITTED, MAX_SUMMARY_DEPTH } from '../../src/recipes/summary.ts'
import { createRuntime, type Runtime } from '../../src/runtime.ts'
import { createManualClock, type ManualClock } from '../../src/utils/clock.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { tempRecipesDir } from './helpers.ts'

// A recipe's summary is kept as JSON: what JSON.stringify alone made of some values lost them without a word — a
// returned Error, Map, Set or RegExp became {}, and a summary nested 5,000 deep or holding a throwing toJSON became
// "[object Object]" (in recipes run --json, recipes runs and the dashboard).

declare global {
  var __sbSummaryMode: string | undefined
}

const RECIPE = `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'returns what it is told to',
  run() {
    const mode = globalThis.__sbSummaryMode
    if (mode === 'deep') {
      let v: Record<string, unknown> = { leaf: true }
      for (let i = 0; i < 5000; i++) v = { n: v }
      return { calls: 3, nested: v }
    }
    if (mode === 'throwing-toJSON') return { calls: 3, contact: { toJSON() { throw new Error('contact is not serialisable') } } }
    if (mode === 'error') { const e = new TypeError('CRM said no'); return { calls: 1, error: e } }
    if (mode === 'bare-error') return new RangeError('out of range')
    if (mode === 'collections') return {
      byStatus: new Map([['queued', 2], ['failed', 1]]),
      byAgent: new Map([[101, 'sales'], [102, 'support']]),
      phones: new Set(['+919876543210', '+919876543211']),
      pattern: /^\\+91\\d{10}$/gi,
    }
    return { calls: 3, when: new Date(0), note: 'plain' }
  },
})
`

let rt: Runtime | undefined
let engine: RecipeEngine | undefined
let folder: ReturnType<typeof tempRecipesDir> | undefined
let dataDir: string | undefined
afterEach(async () => {
  await engine?.stop()
  await rt?.close()
  folder?.cleanup()
  if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  globalThis.__sbSummaryMode = undefined
  engine = rt = folder = dataDir = undefined
})

async function setup() {
  folder = tempRecipesDir()
  folder.write('odd', RECIPE)
  dataDir = mkdtempSync(join(tmpdir(), 'sb-summary-values-'))
  const logs = captureLogs('info')
  const clock: ManualClock = createManualClock('2026-11-30T10:00:00Z')
  rt = await createRuntime(loadConfig({ env: { DATA_DIR: dataDir, LOG_LEVEL: 'info', RECIPES_DIR: folder.dir, RECIPES_TYPECHECK: 'false' } }), { log: logs.log, clock })
  engine = createRecipeEngine(rt)
  const runtime = rt
  const started = engine
  const run = async (mode: string) => {
    await clock.advance(1_000)
    globalThis.__sbSummaryMode = mode
    const made = await started.run('odd')
    const [stored] = await listRuns(runtime, { recipe: 'odd', limit: 1 })
    expect(stored!.id).toBe(made.id)
    // What `recipes run --json` prints and what `recipes runs` / the dashboard read back are the same value.
    expect(stored!.summary).toEqual(made.summary)
    const warnings = logs.find(/^the run's summary held values JSON cannot keep/).filter((l) => l.run_id === made.id)
    return { made, warnings }
  }
  return { run }
}

/** How deep a JSON value nests, and what is at its bottom (iteratively: no stack for 5,000 levels). */
function bottom(value: unknown): { depth: number; at: unknown } {
  let depth = 0
  let at = value
  while (at !== null && typeof at === 'object') {
    depth++
    at = (at as { n?: unknown }).n
  }
  return { depth, at }
}

it('a summary nested 5,000 levels deep keeps its figures and its first levels, the rest cut with a marker', async () => {
  const { run } = await setup()
  const { made, warnings } = await run('deep')
  expect(made.status).toBe('succeeded')
  const summary = made.summary as { calls: number; nested: unknown }
  expect(summary.calls).toBe(3)
  const { depth, at } = bottom(summary.nested)
  expect(at).toBe(DEEPER_OMITTED)
  expect(depth).toBe(MAX_SUMMARY_DEPTH - 1)
  expect(warnings).toHaveLength(1)
  expect(warnings[0]).toMatchObject({ level: 40, recipe: 'odd', replaced_count: 1, replaced: [expect.stringMatching(/nested deeper than 128 levels, cut$/)] })
})

it('a toJSON that throws is replaced by a marker naming the problem; the rest is kept', async () => {
  const { run } = await setup()
  const { made, warnings } = await run('throwing-toJSON')
  expect(made.summary).toEqual({ calls: 3, contact: '[toJSON() threw: contact is not serialisable]' })
  expect(warnings).toHaveLength(1)
  expect(warnings[0]!.replaced).toEqual(['summary.contact: its toJSON() threw (contact is not serialisable)'])
})

it('an Error is its name and message, without its stack — returned as the summary or inside it', async () => {
  const { run } = await setup()
  const inside = await run('error')
  expect(inside.made.summary).toEqual({ calls: 1, error: { name: 'TypeError', message: 'CRM said no' } })
  expect(inside.warnings[0]!.replaced).toEqual(['summary.error: an Error, kept as its name and message'])
  const bare = await run('bare-error')
  expect(bare.made.summary).toEqual({ name: 'RangeError', message: 'out of range' })
  expect(JSON.stringify(bare.made.summary)).not.toContain('at ')
})

it('a Map is an object (string keys) or a list of entries, a Set a list, a RegExp its source text', async () => {
  const { run } = await setup()
  const { made, warnings } = await run('collections')
  expect(made.summary).toEqual({
    byStatus: { queued: 2, failed: 1 },
    byAgent: [[101, 'sales'], [102, 'support']],
    phones: ['+919876543210', '+919876543211'],
    pattern: '/^\\+91\\d{10}$/gi',
  })
  expect(warnings).toHaveLength(1)
  expect(warnings[0]).toMatchObject({ replaced_count: 4 })
})

it('a summary JSON keeps as it is (a Date as its ISO text) is stored as before, without a warning', async () => {
  const { run } = await setup()
  const { made, warnings } = await run('plain')
  expect(made.summary).toEqual({ calls: 3, when: '1970-01-01T00:00:00.000Z', note: 'plain' })
  expect(warnings).toEqual([])
})
