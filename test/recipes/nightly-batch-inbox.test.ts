import { createHash } from 'node:crypto'
import { closeSync, existsSync, futimesSync, mkdirSync, openSync, readdirSync, readFileSync, rmdirSync, statSync, utimesSync, writeFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { createRecipeEngine, type RecipeEngine } from '../../src/recipes/engine.ts'
import { createKvState, recipeStateNamespace } from '../../src/recipes/state.ts'
import { proxyHarness, type ProxyHarness } from '../proxy/helpers.ts'
import { shippedRecipesCopy } from '../helpers/recipes.ts'
import { freePort } from '../helpers/free-port.ts'

/**
 * The shipped nightly-batch recipe over an inbox holding what people actually drop there: a workbook, an
 * image renamed .csv, a Latin-1 export and a file still being copied. Its provider is the sandbox.
 */
const SHIPPED = shippedRecipesCopy()

interface Outcome { file: string; batch_id: number | null; rows: number; rejects: number; waiting: number; waiting_file: string | null; opens_at: string | null; moved_to: string | null; warnings?: string[]; error?: string }

/** 11:00 in India (the harness's clock starts at 02:23 there, outside the calling window). */
const MORNING_IST = Date.parse('2026-03-19T05:30:00Z')

let h: ProxyHarness | undefined
let engine: RecipeEngine | undefined
afterEach(async () => {
  await engine?.stop()
  await h?.close()
  engine = h = undefined
})

it('parks binary and non-CSV files in failed/ with a one-line reason, transcodes Latin-1 with a warning, and the next night is clean', async () => {
  h = await proxyHarness({ env: { RECIPES_DIR: SHIPPED, RECIPES_TIMEZONE: 'Asia/Kolkata' } })
  await h.clock.advanceTo(MORNING_IST)
  const inbox = join(h.rt.config.dataDir, 'inbox')
  mkdirSync(inbox, { recursive: true })
  writeFileSync(join(inbox, 'leads.xlsx'), Buffer.concat([Buffer.from('PK\x03\x04'), Buffer.alloc(64, 0)]))
  writeFileSync(join(inbox, 'photo.csv'), Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('\x00\x00\x1b[2J\x07binary')]))
  writeFileSync(join(inbox, 'clientes.csv'), Buffer.from('telefono,phone,name\nx,9876543210,José Núñez\ny,9876543211,Zoë\n', 'latin1'))
  writeFileSync(join(inbox, 'half-copied.csv.part'), 'phone\n98765')

  engine = createRecipeEngine(h.rt)
  await engine.reload()
  const dry = await engine.run('nightly-batch', { dryRun: true })
  expect(dry.status).toBe('succeeded')
  expect(readdirSync(inbox).sort()).toEqual(['clientes.csv', 'half-copied.csv.part', 'leads.xlsx', 'photo.csv'])
  expect(dry.plan.find((p) => p.kind === 'batch')).toMatchObject({ rows: [{ customer_phone: '+919876543210', name: 'José Núñez' }, { customer_phone: '+919876543211', name: 'Zoë' }] })

  const run = await engine.run('nightly-batch')
  expect(run.status).toBe('succeeded')
  const { batches } = run.result as { batches: Outcome[] }
  const byFile = Object.fromEntries(batches.map((b) => [b.file, b]))
  expect(Object.keys(byFile).sort()).toEqual(['clientes.csv', 'leads.xlsx', 'photo.csv'])

  // Latin-1: launched, names intact, and the run summary says the file was transcoded.
  expect(byFile['clientes.csv']).toMatchObject({ rows: 2, batch_id: expect.any(Number) })
  expect(byFile['clientes.csv']!.warnings).toEqual([expect.stringMatching(/^clientes\.csv is not UTF-8: 4 bytes were read as Windows-1252 \(Latin-1\), the first in "José Núñez"/)])

  // Binary and non-CSV: parked with their reason beside them, one printable line each.
  expect(readdirSync(inbox).sort()).toEqual(['done', 'failed', 'half-copied.csv.part'])
  expect(readdirSync(join(inbox, 'failed')).sort()).toEqual(['leads.xlsx', 'leads.xlsx.error.txt', 'photo.csv', 'photo.csv.error.txt'])
  const reasons = ['photo.csv', 'leads.xlsx'].map((f) => readFileSync(join(inbox, 'failed', `${f}.error.txt`), 'utf8'))
  expect(reasons[0]).toBe('photo.csv is not a CSV file: it looks like a PNG image; export it as "CSV UTF-8" and use that file instead\n')
  expect(reasons[1]).toMatch(/^leads\.xlsx is not a CSV file \(the inbox reads \*\.csv only\)/)
  for (const reason of reasons) expect(reason).toMatch(/^[\x20-\x7e]+\n$/)
  for (const b of [byFile['photo.csv']!, byFile['leads.xlsx']!]) {
    expect(b.moved_to).toMatch(/[/\\]failed[/\\]/)
    expect(b.error).toMatch(/^[\x20-\x7e]+$/)
  }
  expect(readdirSync(join(inbox, 'done')).sort()).toEqual(['clientes.csv', 'clientes.rejects.csv'])

  // The next night finds nothing to fail on.
  const next = await engine.run('nightly-batch')
  expect(next.status).toBe('succeeded')
  expect((next.result as { files: number }).files).toBe(0)
  expect(existsSync(join(inbox, 'half-copied.csv.part'))).toBe(true)
})

it('holds back the contacts whose calling window is closed in inbox/waiting/, and launches them with the first run after it opens', async () => {
  h = await proxyHarness({ env: { RECIPES_DIR: SHIPPED, RECIPES_TIMEZONE: 'Asia/Kolkata', DEFAULT_COUNTRY: 'IN' } })
  // 02:23 in India, 16:53 the day before in New York.
  const inbox = join(h.rt.config.dataDir, 'inbox')
  mkdirSync(inbox, { recursive: true })
  writeFileSync(join(inbox, 'leads.csv'), 'phone,name,timezone\n9876543210,Asha,\n+1 212 555 0123,Bob,America/New_York\n98765 43211,Ravi,\n')
  engine = createRecipeEngine(h.rt)
  await engine.reload()

  // A dry run says the same and moves nothing.
  const dry = await engine.run('nightly-batch', { dryRun: true })
  expect((dry.result as { batches: Outcome[] }).batches).toEqual([expect.objectContaining({ file: 'leads.csv', rows: 1, waiting: 2, opens_at: '2026-03-19T03:30:00.000Z', moved_to: null })])
  expect(readdirSync(inbox)).toEqual(['leads.csv'])

  const night = await engine.run('nightly-batch')
  expect(night.status).toBe('succeeded')
  const [first] = (night.result as { batches: Outcome[] }).batches
  // Bob (New York, mid-afternoon) goes out now; Asha and Ravi wait for 09:00 in India.
  expect(first).toMatchObject({ file: 'leads.csv', batch_id: expect.any(Number), rows: 1, rejects: 0, waiting: 2, opens_at: '2026-03-19T03:30:00.000Z' })
  expect(first!.waiting_file).toMatch(/^waiting\/leads\.[0-9a-f]{8}\.csv$/)
  expect(readdirSync(join(inbox, 'done')).sort()).toEqual(['leads.csv', 'leads.rejects.csv'])
  const held = readFileSync(join(inbox, first!.waiting_file!), 'utf8')
  // Normalized, with the list's campaign, so the later batch counts under the same campaign.
  expect(held.trim().split('\n')).toEqual(['customer_phone,name,timezone,campaign', '+919876543210,Asha,,leads', '+919876543211,Ravi,,leads'])

  // Later that night: still closed, so the waiting file stays as it is and nothing is launched.
  await h.clock.advance(3_600_000)
  const later = await engine.run('nightly-batch')
  expect((later.result as { batches: Outcome[] }).batches).toEqual([expect.objectContaining({ file: first!.waiting_file, batch_id: null, rows: 0, waiting: 2, moved_to: null })])
  expect(readFileSync(join(inbox, first!.waiting_file!), 'utf8')).toBe(held)

  // The first run after 09:00 in India launches them, under the list's name.
  await h.clock.advanceTo(Date.parse('2026-03-19T03:35:00Z'))
  const morning = await engine.run('nightly-batch')
  const [launched] = (morning.result as { batches: Outcome[] }).batches
  expect(launched).toMatchObject({ file: first!.waiting_file, batch: 'leads-2026-03-19', batch_id: expect.any(Number), rows: 2, waiting: 0, waiting_file: null })
  expect(launched!.batch_id).not.toBe(first!.batch_id)
  expect(readdirSync(join(inbox, 'waiting'))).toEqual([])
  expect(readdirSync(join(inbox, 'done')).sort()).toEqual(['leads.csv', `${first!.waiting_file!.slice('waiting/'.length)}`, `${first!.waiting_file!.slice('waiting/'.length, -'.csv'.length)}.rejects.csv`, 'leads.rejects.csv'].sort())
})

// A held-back part and a new export of the same people: the new file's contacts were held back (or called) and the
// waiting part, left as it was, called them again once its window opened.
it('a contact held back in inbox/waiting/ and in a new file is held back once: the waiting part goes without them', async () => {
  h = await proxyHarness({ env: { RECIPES_DIR: SHIPPED, RECIPES_TIMEZONE: 'Asia/Kolkata', DEFAULT_COUNTRY: 'IN' } })
  const inbox = join(h.rt.config.dataDir, 'inbox')
  mkdirSync(inbox, { recursive: true })
  writeFileSync(join(inbox, 'leads.csv'), 'phone,name\n9876543210,Asha\n98765 43211,Ravi\n')
  engine = createRecipeEngine(h.rt)
  await engine.reload()
  // 02:23 in India: both wait.
  const night = await engine.run('nightly-batch')
  expect((night.result as { batches: Outcome[] }).batches).toEqual([expect.objectContaining({ file: 'leads.csv', rows: 0, waiting: 2 })])
  await h.clock.advance(3_600_000)
  writeFileSync(join(inbox, 'again.csv'), 'phone,name\n+91 98765 43210,Asha\n9876543212,Meera\n')
  const later = await engine.run('nightly-batch')
  expect(later.status).toBe('succeeded')
  const phones = readdirSync(join(inbox, 'waiting')).flatMap((f) => readFileSync(join(inbox, 'waiting', f), 'utf8').trim().split('\n').slice(1).map((l) => l.split(',')[0]))
  expect(phones.sort()).toEqual(['+919876543210', '+919876543211', '+919876543212'])
  // The first run after 09:00 in India calls each of them once.
  await h.clock.advanceTo(Date.parse('2026-03-19T03:35:00Z'))
  const morning = await engine.run('nightly-batch')
  expect((morning.result as { batches: Outcome[] }).batches.reduce((n, b) => n + b.rows, 0)).toBe(3)
  expect(readdirSync(join(inbox, 'waiting'))).toEqual([])
})

it('an upload with no clear answer (a 5xx) is parked, not uploaded again next run; a refused one is parked with the provider\'s reason', async () => {
  h = await proxyHarness({ env: { RECIPES_DIR: SHIPPED, RECIPES_TIMEZONE: 'Asia/Kolkata' } })
  await h.clock.advanceTo(MORNING_IST)
  const inbox = join(h.rt.config.dataDir, 'inbox')
  mkdirSync(inbox, { recursive: true })
  engine = createRecipeEngine(h.rt)
  await engine.reload()
  const outcome = async () => ((await engine!.run('nightly-batch')).result as { batches: Outcome[] } | undefined)?.batches[0]

  // The upload's answer is a 500: batches have no idempotency key, so the batch may exist and be calling this list.
  writeFileSync(join(inbox, 'leads.csv'), 'phone,name\n9876543210,Asha\n9876543211,Ravi\n')
  h.sandbox.failNextRequests(1)
  const lost = await outcome()
  expect(lost).toMatchObject({ file: 'leads.csv', batch_id: null, moved_to: expect.stringMatching(/[/\\]failed[/\\]leads\.csv$/) })
  expect(lost!.error).toMatch(/^the upload of batch "leads-2026-03-19" got no clear answer \(internal_error: .*\): the provider may have created it .* before dropping this file in again$/)
  expect(readFileSync(join(inbox, 'failed', 'leads.csv.error.txt'), 'utf8')).toBe(`${lost!.error}\n`)
  const uploads = h.sandbox.stats().requests
  expect((await engine.run('nightly-batch')).status).toBe('succeeded')
  expect(h.sandbox.stats().requests).toBe(uploads)

  // Refused for good (over the provider's 10,000 rows): parked with its reason, not failed again every run.
  const rows = Array.from({ length: 10_001 }, (_, i) => `+9198${String(i).padStart(8, '0')}`).join('\n')
  writeFileSync(join(inbox, 'huge.csv'), `phone\n${rows}\n`)
  const refused = await outcome()
  expect(refused).toMatchObject({ file: 'huge.csv', moved_to: expect.stringMatching(/[/\\]failed[/\\]huge\.csv$/) })
  expect(refused!.error).toMatch(/^the provider refused batch "huge-2026-03-19" \(400 invalid_request: .*10000.*\); fix the file and drop it in again$/)
})

it('an upload refused at connect (nothing reached the provider) leaves the file in the inbox for the next run, not in failed/', async () => {
  // The provider's address is a loopback port nothing listens on: every connection is refused before a byte is sent.
  h = await proxyHarness({ env: { RECIPES_DIR: SHIPPED, RECIPES_TIMEZONE: 'Asia/Kolkata' }, upstreamUrl: async () => `http://127.0.0.1:${await freePort()}` })
  await h.clock.advanceTo(MORNING_IST)
  const inbox = join(h.rt.config.dataDir, 'inbox')
  mkdirSync(inbox, { recursive: true })
  const path = join(inbox, 'leads.csv')
  writeFileSync(path, 'phone,name\n9876543210,Asha\n9876543211,Ravi\n')
  utimesSync(path, new Date(0), new Date(0))
  engine = createRecipeEngine(h.rt)
  await engine.reload()

  const run = await engine.run('nightly-batch')
  // The file is where it was, for the next run to upload; the run failed loudly all the same (the provider is down).
  expect(readdirSync(inbox)).toEqual(['leads.csv'])
  expect(existsSync(join(inbox, 'failed'))).toBe(false)
  expect(run.status).toBe('failed')
  expect(run.error).toMatch(/^could not process leads\.csv \(the provider was unreachable \(ECONNREFUSED: cannot reach http:\/\/127\.0\.0\.1:\d+: .*\), so batch "leads-2026-03-19" was not uploaded: the file stays in the inbox and is uploaded with the next run\)/)
  // No mark of an upload under way is left: the next run uploads the file rather than parking it as interrupted.
  const info = statSync(path)
  expect(await createKvState(h.rt, recipeStateNamespace('nightly-batch')).get(`launched:leads.csv:${info.size}:${Math.trunc(info.mtimeMs)}`)).toBeUndefined()
  await h.clock.advance(3_600_000)
  expect((await engine.run('nightly-batch')).status).toBe('failed')
  expect(readdirSync(inbox)).toEqual(['leads.csv'])
})

it('a failure after the upload (the waiting file cannot be written) never uploads the same contacts again; the next run finishes the file', async () => {
  h = await proxyHarness({ env: { RECIPES_DIR: SHIPPED, RECIPES_TIMEZONE: 'Asia/Kolkata', DEFAULT_COUNTRY: 'IN' } })
  const inbox = join(h.rt.config.dataDir, 'inbox')
  mkdirSync(inbox, { recursive: true })
  // 02:23 in India (closed), 16:53 in New York (open): Bob goes out now, Asha waits.
  const path = join(inbox, 'leads.csv')
  writeFileSync(path, 'phone,name,timezone\n+1 212 555 0123,Bob,America/New_York\n9876543210,Asha,\n')
  // The waiting file's write fails as on a full disk: its .part path is taken by a directory.
  const info = statSync(path)
  const key = `launched:leads.csv:${info.size}:${Math.trunc(info.mtimeMs)}`
  const blocker = join(inbox, 'waiting', `leads.${createHash('sha256').update(key).digest('hex').slice(0, 8)}.csv.part`)
  mkdirSync(blocker, { recursive: true })
  engine = createRecipeEngine(h.rt)
  await engine.reload()

  const first = await engine.run('nightly-batch')
  expect(first.status).toBe('failed')
  expect(h.sandbox.stats().batches).toBe(1)
  await h.clock.advance(3_600_000)
  expect((await engine.run('nightly-batch')).status).toBe('failed')
  expect(h.sandbox.stats().batches).toBe(1)

  // The disk has room again: the next run writes Asha's waiting file and moves the file on, still one batch.
  rmdirSync(blocker)
  await h.clock.advance(3_600_000)
  const third = await engine.run('nightly-batch')
  expect(third.status).toBe('succeeded')
  expect(h.sandbox.stats().batches).toBe(1)
  expect((third.result as { batches: Outcome[] }).batches[0]).toMatchObject({ file: 'leads.csv', rows: 1, waiting: 1, moved_to: expect.stringMatching(/done\/leads\.csv$/) })
  const [waitingFile] = readdirSync(join(inbox, 'waiting'))
  expect(readFileSync(join(inbox, 'waiting', waitingFile!), 'utf8')).toContain('+919876543210')
})

it('a run stopped mid-upload (killed between the upload and its record) parks the file for a person to check, instead of uploading it again', async () => {
  h = await proxyHarness({ env: { RECIPES_DIR: SHIPPED, RECIPES_TIMEZONE: 'Asia/Kolkata' } })
  await h.clock.advanceTo(MORNING_IST)
  const inbox = join(h.rt.config.dataDir, 'inbox')
  mkdirSync(inbox, { recursive: true })
  const path = join(inbox, 'leads.csv')
  writeFileSync(path, 'phone,name\n9876543210,Asha\n')
  // What a killed run leaves: the mark set before the upload, and no record of the upload's end.
  const info = statSync(path)
  await createKvState(h.rt, recipeStateNamespace('nightly-batch')).set(`launched:leads.csv:${info.size}:${Math.trunc(info.mtimeMs)}`, { uploading: '2026-03-19T05:00:00.000Z' })
  engine = createRecipeEngine(h.rt)
  await engine.reload()
  const run = await engine.run('nightly-batch')
  expect(run.status).toBe('succeeded')
  expect(h.sandbox.stats().batches).toBe(0)
  expect(readFileSync(join(inbox, 'failed', 'leads.csv.error.txt'), 'utf8')).toMatch(/^a run stopped while uploading batch "leads-2026-03-19" \(at 2026-03-19T05:00:00.000Z\): the provider may have created it/)
  // Checked and dropped in again (same bytes, same mtime as `mv` keeps): launched this time.
  const { renameSync } = await import('node:fs')
  renameSync(join(inbox, 'failed', 'leads.csv'), path)
  expect((await engine.run('nightly-batch')).status).toBe('succeeded')
  expect(h.sandbox.stats().batches).toBe(1)
})

it('leaves a file modified in the last minute (a copy writing its final name) and a WinSCP .filepart for a later run', async () => {
  h = await proxyHarness({ env: { RECIPES_DIR: SHIPPED, RECIPES_TIMEZONE: 'Asia/Kolkata' } })
  await h.clock.advanceTo(MORNING_IST)
  const inbox = join(h.rt.config.dataDir, 'inbox')
  mkdirSync(inbox, { recursive: true })
  // scp / SFTP / SMB write the final name directly: the first part has arrived, written a few seconds ago.
  const path = join(inbox, 'leads.csv')
  const fd = openSync(path, 'w')
  writeSync(fd, 'phone,name\n9876543210,Asha\n98765')
  const stamp = (at: number) => futimesSync(fd, at / 1000, at / 1000)
  stamp(h.clock.now() - 5_000)
  writeFileSync(join(inbox, 'more.csv.filepart'), 'phone,name\n9876543219,Zed\n')
  engine = createRecipeEngine(h.rt)
  await engine.reload()
  const early = await engine.run('nightly-batch')
  expect(early.status).toBe('succeeded')
  expect(early.result).toEqual({ files: 0, batches: [], modified_in_the_last_minute: ['leads.csv'] })
  expect(readdirSync(inbox).sort()).toEqual(['leads.csv', 'more.csv.filepart'])

  writeSync(fd, '43211,Ravi\n9876543212,Meena\n')
  stamp(h.clock.now() - 1_000)
  closeSync(fd)
  await h.clock.advance(3_600_000)
  const later = await engine.run('nightly-batch')
  expect((later.result as { batches: Outcome[] }).batches).toMatchObject([{ file: 'leads.csv', rows: 3, rejects: 0 }])
  expect(readdirSync(inbox).sort()).toEqual(['done', 'more.csv.filepart'])
})

it('says in its run summary when a file\'s rows of a country split across time zones were called in the recipes\' zone', async () => {
  h = await proxyHarness({ env: { RECIPES_DIR: SHIPPED, RECIPES_TIMEZONE: 'America/New_York', DEFAULT_COUNTRY: 'US' } })
  // 10:30 in New York: inside the calling window there.
  await h.clock.advanceTo(Date.parse('2026-03-19T14:30:00Z'))
  const inbox = join(h.rt.config.dataDir, 'inbox')
  mkdirSync(inbox, { recursive: true })
  writeFileSync(join(inbox, 'east.csv'), 'phone,name\n+1 212 555 0123,Bob\n+1 213 555 0100,Ana\n')
  utimesSync(join(inbox, 'east.csv'), new Date(0), new Date(0))
  engine = createRecipeEngine(h.rt)
  await engine.reload()
  const run = await engine.run('nightly-batch')
  expect(run.status).toBe('succeeded')
  const [outcome] = (run.result as { batches: Outcome[] }).batches
  expect(outcome).toMatchObject({ file: 'east.csv', rows: 2, batch_id: expect.any(Number) })
  expect(outcome!.warnings).toEqual([expect.stringMatching(/^batch rows of countries with several time zones have no timezone column \(US: 2\): their calling window is taken in America\/New_York/)])
})

it('a run that stopped after its launch was recorded, its held-back contacts already in inbox/waiting/, calls them from there — they were rejected as the first file\'s and never called', async () => {
  h = await proxyHarness({ env: { RECIPES_DIR: SHIPPED, RECIPES_TIMEZONE: 'Asia/Kolkata', DEFAULT_COUNTRY: 'IN' } })
  const inbox = join(h.rt.config.dataDir, 'inbox')
  mkdirSync(inbox, { recursive: true })
  // 02:23 in India (closed), 16:53 in New York (open): Bob goes out now, Asha waits.
  const path = join(inbox, 'leads.csv')
  writeFileSync(path, 'phone,name,timezone\n+1 212 555 0123,Bob,America/New_York\n9876543210,Asha,\n')
  engine = createRecipeEngine(h.rt)
  await engine.reload()
  const night = await engine.run('nightly-batch')
  const [first] = (night.result as { batches: Outcome[] }).batches
  expect(first).toMatchObject({ rows: 1, waiting: 1, waiting_file: expect.stringMatching(/^waiting\//) })
  expect(h.sandbox.stats().batches).toBe(1)

  // What a run killed between writing the waiting file and moving the file to done/ leaves: the file in the inbox (as
  // it was: `mv` keeps its size and time), the launch's record, and the waiting file.
  const { renameSync, rmSync } = await import('node:fs')
  renameSync(join(inbox, 'done', 'leads.csv'), path)
  rmSync(join(inbox, 'done'), { recursive: true })
  const info = statSync(path)
  await createKvState(h.rt, recipeStateNamespace('nightly-batch')).set(`launched:leads.csv:${info.size}:${Math.trunc(info.mtimeMs)}`, {
    batch_id: first!.batch_id,
    rows: 1,
    waiting: 1,
    waiting_file: first!.waiting_file,
    opens_at: first!.opens_at,
    held_back: [{ customer_phone: '+919876543210', name: 'Asha', timezone: '', campaign: 'leads' }],
  })
  await h.clock.advance(3_600_000)
  const again = await engine.run('nightly-batch')
  expect(again.status).toBe('succeeded')
  const byFile = Object.fromEntries((again.result as { batches: Outcome[] }).batches.map((b) => [b.file, b]))
  // The file moves on without a second upload; its waiting part stays, still closed, with Asha in it.
  expect(byFile['leads.csv']).toMatchObject({ batch_id: first!.batch_id, moved_to: expect.stringMatching(/done\/leads\.csv$/) })
  expect(byFile[first!.waiting_file!]).toMatchObject({ rejects: 0, waiting: 1, moved_to: null })
  expect(readFileSync(join(inbox, first!.waiting_file!), 'utf8')).toContain('+919876543210,Asha')
  expect(h.sandbox.stats().batches).toBe(1)
  // And goes out once its window opens.
  await h.clock.advanceTo(Date.parse('2026-03-19T03:35:00Z'))
  const morning = await engine.run('nightly-batch')
  expect((morning.result as { batches: Outcome[] }).batches).toMatchObject([{ file: first!.waiting_file, rows: 1, rejects: 0 }])
  expect(h.sandbox.stats().batches).toBe(2)
})

it('a contact in a file whose upload failed is not called by a later file of the same run — it goes with the failed file, once', async () => {
  h = await proxyHarness({ env: { RECIPES_DIR: SHIPPED, RECIPES_TIMEZONE: 'Asia/Kolkata', DEFAULT_COUNTRY: 'IN' } })
  await h.clock.advanceTo(MORNING_IST)
  const inbox = join(h.rt.config.dataDir, 'inbox')
  mkdirSync(inbox, { recursive: true })
  writeFileSync(join(inbox, 'xa.csv'), 'phone\n9876543210\n9876543211\n')
  writeFileSync(join(inbox, 'xb.csv'), 'phone\n9876543211\n9876543212\n')
  engine = createRecipeEngine(h.rt)
  await engine.reload()
  // xa's upload gets no clear answer (a 500): parked for a person to check, its batch perhaps created.
  h.sandbox.failNextRequests(1)
  const run = await engine.run('nightly-batch')
  const byFile = Object.fromEntries((run.result as { batches: Outcome[] }).batches.map((b) => [b.file, b]))
  expect(byFile['xa.csv']).toMatchObject({ batch_id: null, moved_to: expect.stringMatching(/failed\/xa\.csv$/) })
  expect(byFile['xb.csv']).toMatchObject({ rows: 1, rejects: 1, batch_id: expect.any(Number) })
  expect(readFileSync(join(inbox, 'done', 'xb.rejects.csv'), 'utf8')).toMatch(/9876543211.*also in xa\.csv, which this run could not upload/)
})

it('a file written to after the run listed it (while earlier files were uploaded) is left whole for the next run, not half-launched', async () => {
  const { createServer } = await import('node:http')
  let sandboxUrl = ''
  let appended = false
  let late = ''
  // In front of the sandbox: the first batch upload (a0.csv's) is answered only after c1.csv has grown.
  const front = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    if (req.method === 'POST' && req.url?.startsWith('/v1/batch') && !appended) {
      appended = true
      writeFileSync(late, 'phone\n9876543220\n9876543221\n9876543222\n')
    }
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k)).map(([k, v]) => [k, String(v)]))
    const answer = await fetch(`${sandboxUrl}${req.url}`, { method: req.method, headers, ...(chunks.length ? { body: Buffer.concat(chunks) } : {}) })
    res.writeHead(answer.status, Object.fromEntries([...answer.headers].filter(([k]) => !['content-encoding', 'content-length', 'transfer-encoding'].includes(k))))
    res.end(Buffer.from(await answer.arrayBuffer()))
  })
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve))
  try {
    h = await proxyHarness({
      env: { RECIPES_DIR: SHIPPED, RECIPES_TIMEZONE: 'Asia/Kolkata', DEFAULT_COUNTRY: 'IN' },
      upstreamUrl: (url) => {
        sandboxUrl = url
        return `http://127.0.0.1:${(front.address() as { port: number }).port}`
      },
    })
    await h.clock.advanceTo(MORNING_IST)
    const inbox = join(h.rt.config.dataDir, 'inbox')
    mkdirSync(inbox, { recursive: true })
    late = join(inbox, 'c1.csv')
    writeFileSync(join(inbox, 'a0.csv'), 'phone\n9876543210\n')
    writeFileSync(late, 'phone\n9876543220\n')
    utimesSync(late, new Date(0), new Date(0))
    engine = createRecipeEngine(h.rt)
    await engine.reload()
    const run = await engine.run('nightly-batch')
    expect(run.status).toBe('succeeded')
    expect(appended).toBe(true)
    expect((run.result as { batches: Outcome[]; modified_in_the_last_minute?: string[] }).batches.map((b) => b.file)).toEqual(['a0.csv'])
    expect((run.result as { modified_in_the_last_minute?: string[] }).modified_in_the_last_minute).toEqual(['c1.csv'])
    expect(readdirSync(inbox).sort()).toEqual(['c1.csv', 'done'])
    // The next run takes all three rows.
    await h.clock.advance(3_600_000)
    const next = await engine.run('nightly-batch')
    expect((next.result as { batches: Outcome[] }).batches).toMatchObject([{ file: 'c1.csv', rows: 3 }])
  } finally {
    await new Promise((resolve) => front.close(resolve))
  }
})
