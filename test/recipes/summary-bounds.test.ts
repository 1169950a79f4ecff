import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/load.ts'
import { createRecipeEngine } from '../../src/recipes/engine.ts'
import { listRuns, MAX_ERROR_CHARS } from '../../src/recipes/runner.ts'
import { encodeSummary, MAX_SUMMARY_CHARS, summaryLine } from '../../src/recipes/summary.ts'
import { createRuntime, type Runtime } from '../../src/runtime.ts'
import { LOG_LINE_MAX_BYTES } from '../../src/utils/log-line-bound.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { tempRecipesDir } from './helpers.ts'

/**
 * A run's summary is stored with the run, logged on its line and read by every listing of runs: one over
 * MAX_SUMMARY_CHARS keeps its figures and the start of its long lists. The shipped follow-up recipe lists each call
 * it scheduled; a sweep after an outage made a row — and a log line — of megabytes.
 */
const call = (i: number) => ({ status: 'queued', phone: `+9198765${String(i).padStart(5, '0')}`, scheduled_for: '2026-01-15T11:00:00.000Z', idempotency_key: `cb6e38d7-04bf-58b1-b755-${String(i).padStart(12, '0')}` })

describe('a summary over the bound', () => {
  it('keeps its figures and the first items of a long list, saying how many went', () => {
    const text = encodeSummary({ planned: 5000, queued: 5000, skipped: 12, calls: Array.from({ length: 5000 }, (_, i) => call(i)) })!
    expect(text.length).toBeLessThanOrEqual(MAX_SUMMARY_CHARS)
    const summary = JSON.parse(text) as { planned: number; queued: number; skipped: number; calls: unknown[]; calls_omitted: number }
    expect(summary).toMatchObject({ planned: 5000, queued: 5000, skipped: 12 })
    expect(summary.calls.length).toBeGreaterThan(0)
    expect(summary.calls[0]).toEqual(call(0))
    expect(summary.calls.length + summary.calls_omitted).toBe(5000)
    expect(Object.keys(summary)).toEqual(['planned', 'queued', 'skipped', 'calls', 'calls_omitted'])
    expect(summaryLine(summary)).toBe(`planned 5000 · queued 5000 · skipped 12 · calls ${summary.calls.length} · calls_omitted ${summary.calls_omitted}`)
  })

  it('cuts lists at every depth, a long string to its start, a top-level list to its first items', () => {
    const nested = JSON.parse(encodeSummary({ batches: [{ name: 'leads', rows: Array.from({ length: 20_000 }, (_, i) => i) }] })!) as { batches: Array<{ rows: number[]; rows_omitted: number }> }
    expect(nested.batches[0]!.rows.length + nested.batches[0]!.rows_omitted).toBe(20_000)
    const long = JSON.parse(encodeSummary({ note: 'x'.repeat(1_000_000) })!) as { note: string }
    expect(long.note).toMatch(/^x+… \(\d+ more characters\)$/)
    expect(long.note.length).toBeLessThan(MAX_SUMMARY_CHARS)
    const list = JSON.parse(encodeSummary(Array.from({ length: 100_000 }, (_, i) => i))!) as number[]
    expect(list.slice(0, 3)).toEqual([0, 1, 2])
    expect(list.length).toBeLessThan(100_000)
  })

  it('with too many keys to cut, keeps its top level\'s figures; with too many figures, says only that it was cut', () => {
    const wide: Record<string, unknown> = { planned: 3, label: 'sweep', calls: [1, 2, 3] }
    for (let i = 0; i < 4_000; i++) wide[`conversation_${i}`] = { status: 'no_answer', reason: 'y'.repeat(30) }
    const kept = JSON.parse(encodeSummary(wide)!) as Record<string, unknown>
    expect(kept).toEqual({ truncated: expect.stringMatching(/^a summary of \d+ characters, over the 65536 kept$/), planned: 3, label: 'sweep', calls_omitted: 3 })
    const figures: Record<string, number> = {}
    for (let i = 0; i < 20_000; i++) figures[`count_${i}`] = i
    expect(JSON.parse(encodeSummary(figures)!)).toEqual({ truncated: expect.stringMatching(/^a summary of \d+ characters/) })
  })

  it('leaves a summary within the bound as it is', () => {
    const value = { planned: 2, calls: Array.from({ length: 100 }, (_, i) => call(i)) }
    expect(encodeSummary(value)).toBe(JSON.stringify(value))
  })
})

let rt: Runtime | undefined
let folder: ReturnType<typeof tempRecipesDir> | undefined
let dataDir: string | undefined
afterEach(async () => {
  await rt?.close()
  folder?.cleanup()
  if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  rt = folder = dataDir = undefined
})

it('a run that returns a summary of megabytes is stored and logged within the bound', async () => {
  folder = tempRecipesDir()
  folder.write('big', `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'returns every call it planned',
  run: () => ({ planned: 20000, calls: Array.from({ length: 20000 }, (_, i) => ({ status: 'queued', phone: '+9198765' + String(i).padStart(5, '0'), scheduled_for: '2026-01-15T11:00:00.000Z' })) }),
})
`)
  dataDir = mkdtempSync(join(tmpdir(), 'sb-summary-'))
  const logs = captureLogs('info')
  rt = await createRuntime(loadConfig({ env: { DATA_DIR: dataDir, LOG_LEVEL: 'info', RECIPES_DIR: folder.dir, RECIPES_TYPECHECK: 'false' } }), { log: logs.log })
  const engine = createRecipeEngine(rt)
  try {
    await engine.run('big')
  } finally {
    await engine.stop()
  }
  const [run] = await listRuns(rt, { recipe: 'big' })
  expect(run).toMatchObject({ status: 'succeeded', summary: { planned: 20000, calls_omitted: expect.any(Number) } })
  const stored = await rt.store.db.selectFrom('recipe_runs').select('summary').executeTakeFirstOrThrow()
  expect(stored.summary!.length).toBeLessThanOrEqual(MAX_SUMMARY_CHARS)
  const [line] = logs.find(/^recipe run succeeded$/)
  // Stored up to MAX_SUMMARY_CHARS; its log line is cut further, to a line collectors keep whole (src/utils/log-line-bound.ts).
  expect(JSON.stringify(line).length).toBeLessThan(LOG_LINE_MAX_BYTES)
  expect(line).toMatchObject({ summary: { planned: 20000, calls_omitted: expect.any(Number) } })
})

it('a run that throws an error of megabytes is recorded and logged with the start of its message', async () => {
  folder = tempRecipesDir()
  folder.write('loud', `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'throws the whole response it got',
  run: () => { throw new Error('CRM answered 500: ' + 'x'.repeat(2_000_000)) },
})
`)
  dataDir = mkdtempSync(join(tmpdir(), 'sb-summary-'))
  const logs = captureLogs('info')
  rt = await createRuntime(loadConfig({ env: { DATA_DIR: dataDir, LOG_LEVEL: 'info', RECIPES_DIR: folder.dir, RECIPES_TYPECHECK: 'false' } }), { log: logs.log })
  const engine = createRecipeEngine(rt)
  try {
    await engine.run('loud')
  } finally {
    await engine.stop()
  }
  const [run] = await listRuns(rt, { recipe: 'loud' })
  expect(run!.status).toBe('failed')
  expect(run!.error).toMatch(new RegExp(`^CRM answered 500: x+… \\(${2_000_000 + 18 - MAX_ERROR_CHARS} more characters\\) \\(at .*loud\\.ts:\\d+:\\d+\\)$`))
  expect(run!.error!.length).toBeLessThan(MAX_ERROR_CHARS + 500)
  const [line] = logs.find(/^recipe run failed$/)
  expect(JSON.stringify(line).length).toBeLessThan(MAX_ERROR_CHARS + 1_000)
})
