import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { createRecipeEngine, type RecipeEngine } from '../../src/recipes/engine.ts'
import { recipeTemplate } from '../../src/recipes/new-command.ts'
import { createKvState, recipeStateNamespace } from '../../src/recipes/state.ts'
import { proxyHarness, type ProxyHarness } from '../proxy/helpers.ts'

/**
 * A recipe made with `recipes new <name> --from batch`, run as the service runs it against the sandbox: each file
 * in its own inbox folder becomes one batch, once — the next day's run does not call the same contacts again.
 */

/** 11:00 in India: inside the calling window of the Indian numbers below. */
const MORNING_IST = Date.parse('2026-03-19T05:30:00Z')

let h: ProxyHarness | undefined
let engine: RecipeEngine | undefined
let recipesDir: string | undefined
afterEach(async () => {
  await engine?.stop()
  await h?.close()
  if (recipesDir) rmSync(recipesDir, { recursive: true, force: true })
  engine = h = recipesDir = undefined
})

async function start() {
  recipesDir = mkdtempSync(join(tmpdir(), 'sb-batch-template-'))
  writeFileSync(join(recipesDir, 'weekly.ts'), recipeTemplate('batch', 'weekly'))
  h = await proxyHarness({ env: { RECIPES_DIR: recipesDir, RECIPES_TIMEZONE: 'Asia/Kolkata', RECIPES_TYPECHECK: 'false' } })
  await h.clock.advanceTo(MORNING_IST)
  const inbox = join(h.rt.config.dataDir, 'inbox')
  const own = join(inbox, 'weekly')
  mkdirSync(own, { recursive: true })
  engine = createRecipeEngine(h.rt)
  await engine.reload()
  const batchesUpstream = async () => (await h!.rt.workspaceClient().listBatches({ limit: 100 })).data.length
  return { inbox, own, engine, batchesUpstream }
}

it('launches each file of its own inbox folder once and moves it to done/; the next run calls nobody again', async () => {
  const { inbox, own, engine, batchesUpstream } = await start()
  writeFileSync(join(own, 'leads.csv'), 'phone,name\n9876543210,Asha\n9876543211,Ravi\n')
  // The shipped nightly-batch's folder is not this recipe's: two recipes reading one folder would launch it twice.
  writeFileSync(join(inbox, 'other.csv'), 'phone\n9876543212\n')

  const first = await engine.run('weekly')
  expect(first.status).toBe('succeeded')
  expect(first.result).toMatchObject({ batches: [{ file: 'leads.csv', rows: 2, rejects: 0, held_back: 0, batch_id: expect.any(Number) }] })
  expect(readdirSync(own).sort()).toEqual(['done'])
  expect(readdirSync(join(own, 'done')).sort()).toEqual(['leads.csv', 'leads.rejects.csv'])
  expect(existsSync(join(inbox, 'other.csv'))).toBe(true)
  expect(await batchesUpstream()).toBe(1)

  await h!.clock.advance(24 * 3_600_000)
  const next = await engine.run('weekly')
  expect(next.status).toBe('succeeded')
  expect(next.result).toEqual({ batches: [] })
  expect(await batchesUpstream()).toBe(1)
})

it('a file launched by a run that crashed before moving it is moved, not launched again', async () => {
  const { own, engine, batchesUpstream } = await start()
  const file = join(own, 'leads.csv')
  writeFileSync(file, 'phone\n9876543210\n')
  // What the crashed run recorded right after its launch (the key names this version of the file).
  const info = statSync(file)
  await createKvState(h!.rt, recipeStateNamespace('weekly')).set(`launched:leads.csv:${info.size}:${Math.trunc(info.mtimeMs)}`, { batch_id: 41, rows: 1, rejects: [], held_back: [], held_back_file: null })

  const run = await engine.run('weekly')
  expect(run.status).toBe('succeeded')
  expect(run.result).toMatchObject({ batches: [{ file: 'leads.csv', batch_id: 41 }] })
  expect(readdirSync(join(own, 'done')).sort()).toEqual(['leads.csv', 'leads.rejects.csv'])
  expect(await batchesUpstream()).toBe(0)
})

it('keeps every day\'s held-back contacts and done file (a second leads.csv replaces neither), with its rejects beside it', async () => {
  const { own, engine } = await start()
  // 02:23 in India: Indian contacts are held back (their window is closed).
  await h!.clock.advanceTo(Date.parse('2026-03-20T20:53:00Z'))
  writeFileSync(join(own, 'leads.csv'), 'phone,name\n9876543210,Asha\nnot-a-number,Bad\n')
  const day1 = await engine.run('weekly')
  expect(day1.result).toMatchObject({ batches: [{ file: 'leads.csv', held_back: 1, rejects: 1 }] })
  await h!.clock.advance(24 * 3_600_000)
  writeFileSync(join(own, 'leads.csv'), 'phone,name\n9876543211,Ravi\n')
  await engine.run('weekly')

  const held = readdirSync(join(own, 'held-back')).sort()
  expect(held).toEqual(['leads.2026-03-20.csv', 'leads.2026-03-21.csv'])
  expect(readFileSync(join(own, 'held-back', held[0]!), 'utf8')).toContain('+919876543210')
  expect(readFileSync(join(own, 'held-back', held[1]!), 'utf8')).toContain('+919876543211')
  expect(readdirSync(join(own, 'done')).sort()).toEqual(['leads-2.csv', 'leads-2.rejects.csv', 'leads.csv', 'leads.rejects.csv'])
  expect(readFileSync(join(own, 'done', 'leads.rejects.csv'), 'utf8')).toMatch(/^row,raw,reason\n3,not-a-number,/)
})

it('a run stopped mid-upload moves the file to failed/ for a person to check, instead of uploading it again', async () => {
  const { own, engine, batchesUpstream } = await start()
  const file = join(own, 'leads.csv')
  writeFileSync(file, 'phone\n9876543210\n')
  const info = statSync(file)
  await createKvState(h!.rt, recipeStateNamespace('weekly')).set(`launched:leads.csv:${info.size}:${Math.trunc(info.mtimeMs)}`, { uploading: '2026-03-19T05:00:00.000Z' })
  const run = await engine.run('weekly')
  expect(run.status).toBe('succeeded')
  expect(await batchesUpstream()).toBe(0)
  expect(readdirSync(join(own, 'failed')).sort()).toEqual(['leads.csv', 'leads.csv.error.txt'])
})

it('never overwrites an archived list with another file\'s rejects: a list named z.rejects.csv keeps its contacts', async () => {
  const { own, engine } = await start()
  writeFileSync(join(own, 'z.rejects.csv'), 'name,phone\nORIGINAL-LIST-ROW,9876543210\n')
  await engine.run('weekly')
  writeFileSync(join(own, 'z.csv'), 'name,phone\nQ,notaphone\n')
  expect((await engine.run('weekly')).status).toBe('succeeded')
  const done = join(own, 'done')
  expect(readFileSync(join(done, 'z.rejects.csv'), 'utf8')).toContain('ORIGINAL-LIST-ROW')
  expect(readdirSync(done).sort()).toEqual(['z-2.csv', 'z-2.rejects.csv', 'z.rejects.csv', 'z.rejects.rejects.csv'])
  expect(readFileSync(join(done, 'z-2.rejects.csv'), 'utf8')).toMatch(/^row,raw,reason\n2,notaphone,/)
})

it('names the campaign by the list, not by the day: the same list sent again, or held back and dropped in again, stays one campaign', async () => {
  // The batch is named by list and day; its campaign was too, so each day's file was a new campaign — a fresh
  // follow-up cap for the same contacts every day, and the report split by day (a recipe author's probe).
  const { own, engine } = await start()
  writeFileSync(join(own, 'leads.csv'), 'phone,name\n9876543210,Asha\n')
  writeFileSync(join(own, 'leads.2026-03-18.csv'), 'phone,name\n9876543211,Ravi\n')
  const run = await engine.run('weekly', { dryRun: true })
  expect(run.status).toBe('succeeded')
  const batches = run.plan.filter((p) => p.kind === 'batch')
  expect(batches.map((b) => (b.kind === 'batch' ? [b.name, b.rows.map((r) => r.campaign)] : null))).toEqual([
    ['leads-2026-03-19', ['leads']],
    ['leads-2026-03-19', ['leads']],
  ])
})
