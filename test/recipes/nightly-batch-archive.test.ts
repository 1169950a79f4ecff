import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { createRecipeEngine, type RecipeEngine } from '../../src/recipes/engine.ts'
import { proxyHarness, type ProxyHarness } from '../proxy/helpers.ts'
import { shippedRecipesCopy } from '../helpers/recipes.ts'

/**
 * The shipped nightly-batch recipe archiving what it launched: names in done/ and failed/ that are never taken twice
 * and fit the file system, inbox entries that are not files, and batch names from file names that hold anything.
 */
const SHIPPED = shippedRecipesCopy()

interface Outcome { file: string; batch: string; batch_id: number | null; rows: number; rejects: number; moved_to: string | null; warnings?: string[]; error?: string }
interface Summary { files: number; batches: Outcome[]; skipped?: Array<{ entry: string; reason: string }> }

/** 11:00 in India: inside the calling window for the Indian numbers below. */
const MORNING_IST = Date.parse('2026-03-19T05:30:00Z')
/** What most file systems allow in one name (ext4, XFS, APFS, NTFS in UTF-16 units). */
const NAME_MAX = 255

let h: ProxyHarness | undefined
let engine: RecipeEngine | undefined
afterEach(async () => {
  await engine?.stop()
  await h?.close()
  engine = h = undefined
})

async function start(): Promise<string> {
  h = await proxyHarness({ env: { RECIPES_DIR: SHIPPED, RECIPES_TIMEZONE: 'Asia/Kolkata' } })
  await h.clock.advanceTo(MORNING_IST)
  const inbox = join(h.rt.config.dataDir, 'inbox')
  mkdirSync(inbox, { recursive: true })
  engine = createRecipeEngine(h.rt)
  await engine.reload()
  return inbox
}

/** A file dropped long enough ago not to be taken for one still being copied. */
function drop(inbox: string, name: string, text: string): void {
  writeFileSync(join(inbox, name), text)
  utimesSync(join(inbox, name), new Date(0), new Date(0))
}

it('never overwrites an archived file with another file\'s rejects: the suffix is chosen so both names are free', async () => {
  const inbox = await start()
  const done = join(inbox, 'done')
  drop(inbox, 'z.rejects.csv', 'name,phone\nORIGINAL-LIST-ROW,9876543210\n')
  expect((await engine!.run('nightly-batch')).status).toBe('succeeded')
  expect(readFileSync(join(done, 'z.rejects.csv'), 'utf8')).toContain('ORIGINAL-LIST-ROW')

  drop(inbox, 'z.csv', 'name,phone\nQ,notaphone\n')
  const run = await engine!.run('nightly-batch')
  expect(run.status).toBe('succeeded')
  expect((run.result as Summary).batches).toMatchObject([{ file: 'z.csv', rejects: 1, moved_to: expect.stringMatching(/[/\\]done[/\\]z-2\.csv$/) }])
  // The first list is as it was; the second sits beside its own rejects.
  expect(readFileSync(join(done, 'z.rejects.csv'), 'utf8')).toContain('ORIGINAL-LIST-ROW')
  expect(readFileSync(join(done, 'z-2.csv'), 'utf8')).toContain('notaphone')
  expect(readFileSync(join(done, 'z-2.rejects.csv'), 'utf8')).toMatch(/^row,raw,reason\n2,notaphone,/)
  expect(readdirSync(done).sort()).toEqual(['z-2.csv', 'z-2.rejects.csv', 'z.rejects.csv', 'z.rejects.rejects.csv'])
})

it('a file whose name is near the file system\'s limit is launched once and archived with names that fit, also when the name is taken', async () => {
  const inbox = await start()
  const long = `${'M'.repeat(247)}.csv`
  drop(inbox, long, 'name,phone\nA,9876543210\n')
  const first = await engine!.run('nightly-batch')
  expect(first.status).toBe('succeeded')
  expect(h!.sandbox.stats().batches).toBe(1)
  const done = readdirSync(join(inbox, 'done'))
  expect(done).toHaveLength(2)
  for (const name of done) expect(Buffer.byteLength(name)).toBeLessThanOrEqual(NAME_MAX)
  // The two stay a pair: the same stem, cut, with `.csv` and `.rejects.csv`.
  const moved = done.find((n) => !n.endsWith('.rejects.csv'))!
  expect(moved).toMatch(/^M+\.csv$/)
  expect(done).toContain(moved.replace(/\.csv$/, '.rejects.csv'))
  expect(readdirSync(inbox).sort()).toEqual(['done'])

  // The same name again (another night): the `-2` suffix fits too, and so does a multi-byte name's cut.
  drop(inbox, long, 'name,phone\nB,9876543211\n')
  const accented = `${'é'.repeat(125)}.csv` // 254 bytes
  drop(inbox, accented, 'name,phone\nC,9876543212\n')
  const second = await engine!.run('nightly-batch')
  expect(second.status).toBe('succeeded')
  expect(h!.sandbox.stats().batches).toBe(3)
  const all = readdirSync(join(inbox, 'done'))
  expect(all).toHaveLength(6)
  for (const name of all) {
    expect(Buffer.byteLength(name)).toBeLessThanOrEqual(NAME_MAX)
    expect(name).not.toContain('\ufffd')
  }
  expect(all.filter((n) => /-2\.(rejects\.)?csv$/.test(n))).toHaveLength(2)
  expect(readdirSync(inbox).sort()).toEqual(['done'])
  expect((await engine!.run('nightly-batch')).status).toBe('succeeded')
})

it('a launched file that cannot be archived in done/ is parked in failed/ with the reason, not failed on every run', async () => {
  const inbox = await start()
  // done/ cannot be made (its name is a link into a file, as a share that went away leaves it): the archive step
  // fails after the upload.
  writeFileSync(join(h!.rt.config.dataDir, 'a-file'), '')
  symlinkSync(join(h!.rt.config.dataDir, 'a-file', 'done'), join(inbox, 'done'))
  drop(inbox, 'leads.csv', 'name,phone\nA,9876543210\n')
  const run = await engine!.run('nightly-batch')
  expect(run.status).toBe('succeeded')
  expect(h!.sandbox.stats().batches).toBe(1)
  const [outcome] = (run.result as Summary).batches
  expect(outcome).toMatchObject({ file: 'leads.csv', batch_id: expect.any(Number), rows: 1, moved_to: expect.stringMatching(/[/\\]failed[/\\]leads\.csv$/) })
  expect(outcome!.error).toMatch(/^leads\.csv was launched as batch \d+ \(1 row, 0 waiting, 0 rejected\) but could not be moved to done\/ \(.*\): parked here so later runs do not fail on it; do not drop it in again/)
  expect(readFileSync(join(inbox, 'failed', 'leads.csv.error.txt'), 'utf8')).toBe(`${outcome!.error}\n`)
  expect(existsSync(join(inbox, 'leads.csv'))).toBe(false)
  const next = await engine!.run('nightly-batch')
  expect(next.status).toBe('succeeded')
  expect((next.result as Summary).files).toBe(0)
  expect(h!.sandbox.stats().batches).toBe(1)
})

it('names each inbox entry it skips and why: a symbolic link (parked, never followed) and a folder named .csv', async () => {
  const inbox = await start()
  const target = join(h!.rt.config.dataDir, 'outside.csv')
  writeFileSync(target, 'name,phone\nSECRET,9876543210\n')
  symlinkSync(target, join(inbox, 'link.csv'))
  symlinkSync(join(h!.rt.config.dataDir, 'nowhere'), join(inbox, 'dangling.csv'))
  mkdirSync(join(inbox, 'dir.csv'))
  const dry = await engine!.run('nightly-batch', { dryRun: true })
  expect(dry.plan).toEqual([])
  expect(readdirSync(inbox).sort()).toEqual(['dangling.csv', 'dir.csv', 'link.csv'])

  const run = await engine!.run('nightly-batch')
  expect(run.status).toBe('succeeded')
  const summary = run.result as Summary
  const links = summary.batches.filter((b) => b.file.endsWith('.csv'))
  expect(links.map((b) => b.file).sort()).toEqual(['dangling.csv', 'link.csv'])
  for (const b of links) {
    expect(b.error).toMatch(/is a symbolic link: the inbox reads files only, never a link's target/)
    expect(b.moved_to).toMatch(/[/\\]failed[/\\]/)
  }
  expect(summary.skipped).toEqual([{ entry: 'dir.csv', reason: expect.stringMatching(/^dir\.csv is a folder, not a file: left as it is/) }])
  // The link itself moved, its target untouched and never read.
  expect(lstatSync(join(inbox, 'failed', 'link.csv')).isSymbolicLink()).toBe(true)
  expect(readFileSync(target, 'utf8')).toContain('SECRET')
  expect(h!.sandbox.stats().batches).toBe(0)
  expect(readFileSync(join(inbox, 'failed', 'link.csv.error.txt'), 'utf8')).toMatch(/^link\.csv is a symbolic link/)
})

it('a file name\'s control characters never reach the provider\'s batch name', async () => {
  const inbox = await start()
  drop(inbox, 'new\nline\x1b[31m.csv', 'name,phone\nA,9876543210\n')
  const run = await engine!.run('nightly-batch')
  expect(run.status).toBe('succeeded')
  const [outcome] = (run.result as Summary).batches
  expect(outcome!.batch).toBe('new line [31m-2026-03-19')
  const answer = (await (await h!.direct(`/v1/batch-calls/${outcome!.batch_id}`)).json()) as { data: { name: string } }
  expect(answer.data.name).toBe('new line [31m-2026-03-19')
})

it('a very long file name gives a batch name of at most 200 characters, the night kept', async () => {
  const inbox = await start()
  drop(inbox, `${'L'.repeat(240)}.csv`, 'name,phone\nA,9876543210\n')
  const run = await engine!.run('nightly-batch')
  const [outcome] = (run.result as Summary).batches
  expect(outcome!.batch.length).toBeLessThanOrEqual(200)
  expect(outcome!.batch).toMatch(/^L+-2026-03-19$/)
})

it('says in its run summary which cells no header names, and that they were not passed to the calls', async () => {
  const inbox = await start()
  drop(inbox, 'ragged.csv', 'name,phone\nA,9876543210,extra,cells\n')
  const run = await engine!.run('nightly-batch')
  const [outcome] = (run.result as Summary).batches
  expect(outcome).toMatchObject({ file: 'ragged.csv', rows: 1 })
  expect(outcome!.warnings).toEqual(['ragged.csv has cells beyond its header\'s 2 columns in 1 row (row 2: "extra", "cells"): they are not passed to the calls; name those columns in the header to keep them'])
})

// zod's record() copies a row and skips a `__proto__` key: through ctx.campaigns.launchBatch the column reached the
// provider's batch with every cell empty, and nothing said so.
it('a column named "__proto__" reaches the batch with its values, through the recipe API', async () => {
  const inbox = await start()
  drop(inbox, 'proto.csv', 'name,__proto__,phone\nA,P,9876543210\n')
  const dry = await engine!.run('nightly-batch', { dryRun: true })
  const batch = dry.plan.find((e) => e.kind === 'batch') as { rows: Array<Record<string, string>> } | undefined
  expect(batch?.rows.map((r) => Object.hasOwn(r, '__proto__') ? r['__proto__'] : undefined)).toEqual(['P'])
})

// A contact in two files of one run (a list sent again, two exports of the same people) was called twice, within a
// second, by two batches: the second file's row is rejected, naming the first file.
it('a contact in two files of one run is called once: the later file\'s row is rejected, naming the file that calls it', async () => {
  const inbox = await start()
  drop(inbox, 'a.csv', 'name,phone\nAsha,+919876543221\nRavi,9876543222\n')
  drop(inbox, 'b.csv', 'name,phone\nAsha again,098765 43221\nMeera,9876543223\n')
  const run = await engine!.run('nightly-batch')
  expect(run.status).toBe('succeeded')
  expect((run.result as Summary).batches.map((b) => [b.file, b.rows, b.rejects])).toEqual([['a.csv', 2, 0], ['b.csv', 1, 1]])
  expect(readFileSync(join(inbox, 'done', 'b.rejects.csv'), 'utf8')).toBe('row,raw,reason\n2,098765 43221,"also in a.csv, which this run calls"\n')
  // Each number once across the run's batches.
  const uploaded = h!.sandbox.stats()
  expect(uploaded.batches).toBe(2)
})
