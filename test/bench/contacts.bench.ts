/**
 * 100,000 contacts normalized (libphonenumber-js, full metadata), deduped on E.164, checked against a
 * do-not-call list loaded from the database, and written as a batch CSV — against a baseline that only
 * parses the same file and writes it back (same csv-parse/csv-stringify, no per-row work), measured in
 * the same run. Budgets (DESIGN.md): ≤ 3 s, peak RSS ≤ 300 MB.
 *
 * Each pass runs in a fresh process (`--child <baseline|measured> <dir>`, one JSON line out), so its
 * peak RSS is its own — not the generator's, nor an earlier pass's garbage. Best of three, interleaved.
 */
import { spawnSync } from 'node:child_process'
import { createReadStream, createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs'
import { once } from 'node:events'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse } from 'csv-parse'
import { stringify } from 'csv-stringify'
import { loadDncList, prepareContacts, writeBatchCsv } from '../../src/campaigns/index.ts'
import { loadConfig } from '../../src/config/load.ts'
import { createRuntime, type Runtime } from '../../src/runtime.ts'
import { createSilentLogger } from '../../src/utils/logger.ts'
import { createSeededRandom } from '../../src/utils/random.ts'

const ROWS = 100_000
const DNC_ROWS = 2_000
const RUNS = 3
const BUDGET_MS = 3000
const BUDGET_RSS_MB = 300

const openRuntime = (dir: string): Promise<Runtime> =>
  createRuntime(loadConfig({ env: { DATA_DIR: dir, WEBHOOK_SECRET: 'x', VOICE_API_KEY: 'sk_bench', LOG_LEVEL: 'silent', DEFAULT_COUNTRY: 'IN' } }), {
    log: createSilentLogger(),
  })

interface Pass {
  ms: number
  /** CPU time of the timed part alone (user + system): what the code costs, whatever else loads the machine. */
  workCpuMs: number
  cpuMs: number
  rssMb: number
  kept?: number
  rejects?: number
  blocked?: number
}

function cpuMsSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start)
  return (used.user + used.system) / 1000
}

async function baselinePass(dir: string): Promise<Omit<Pass, 'cpuMs' | 'rssMb'>> {
  const started = performance.now()
  const cpu = process.cpuUsage()
  const out = createWriteStream(join(dir, 'baseline.csv'))
  const csv = stringify({ header: true, columns: ['customer_phone', 'name', 'city', 'amount_due'] })
  csv.pipe(out)
  let header = true
  const parser = createReadStream(join(dir, 'contacts.csv')).pipe(parse({ bom: true, skip_empty_lines: true, relax_column_count: true, trim: true }))
  for await (const record of parser as AsyncIterable<string[]>) {
    if (header) {
      header = false
      continue
    }
    if (!csv.write(record)) await once(csv, 'drain')
  }
  csv.end()
  await once(out, 'finish')
  return { ms: performance.now() - started, workCpuMs: cpuMsSince(cpu) }
}

async function measuredPass(dir: string): Promise<Omit<Pass, 'cpuMs' | 'rssMb'>> {
  const rt = await openRuntime(dir)
  const started = performance.now()
  const cpu = process.cpuUsage()
  const dnc = await loadDncList(rt, { file: false })
  const prepared = await prepareContacts(join(dir, 'contacts.csv'), { defaultCountry: 'IN', dnc })
  await writeBatchCsv(join(dir, 'batch.csv'), prepared.rows, prepared.columns)
  const ms = performance.now() - started
  const workCpuMs = cpuMsSince(cpu)
  await rt.close()
  return { ms, workCpuMs, kept: prepared.rows.length, rejects: prepared.rejects.length, blocked: prepared.stats.blocked }
}

if (process.argv[2] === '--child') {
  const [mode, dir] = [process.argv[3]!, process.argv[4]!]
  const cpu = process.cpuUsage()
  const result = mode === 'baseline' ? await baselinePass(dir) : await measuredPass(dir)
  const used = process.cpuUsage(cpu)
  process.stdout.write(JSON.stringify({ ...result, cpuMs: (used.user + used.system) / 1000, rssMb: process.resourceUsage().maxRSS / 1024 }) + '\n')
  process.exit(0)
}

// ── generate the input: spellings seen in real lists, a few percent duplicates and junk ──────────────
const dir = mkdtempSync(join(tmpdir(), 'sb-bench-contacts-'))
const random = createSeededRandom(7)
const pick = <T>(xs: T[]) => xs[Math.floor(random.next() * xs.length)]!
function spell(national: string): string {
  switch (Math.floor(random.next() * 6)) {
    case 0: return national
    case 1: return `0${national}`
    case 2: return `+91 ${national.slice(0, 5)}-${national.slice(5)}`
    case 3: return `91${national}`
    case 4: return `'${national}`
    default: return `+91${national}`
  }
}
const nationals: string[] = []
const input = join(dir, 'contacts.csv')
{
  const out = createWriteStream(input)
  const csv = stringify({ header: true, columns: ['Mobile', 'name', 'city', 'amount_due'] })
  csv.pipe(out)
  const cities = ['Pune', 'Mumbai', 'Delhi', 'Chennai, TN', 'Kolkata']
  for (let i = 0; i < ROWS; i++) {
    let phone: string
    const r = random.next()
    if (r < 0.03 && nationals.length > 0) phone = spell(pick(nationals))
    else if (r < 0.05) phone = pick(['+', '', '12345', 'n/a', '5000000000'])
    else {
      const national = `${6 + Math.floor(random.next() * 4)}${String(Math.floor(random.next() * 1e9)).padStart(9, '0')}`
      nationals.push(national)
      phone = spell(national)
    }
    if (!csv.write([phone, `Customer ${i}`, pick(cities), String(Math.floor(random.next() * 10_000))])) await once(csv, 'drain')
  }
  csv.end()
  await once(out, 'finish')
}
{
  const rt = await openRuntime(dir)
  const rows = Array.from({ length: DNC_ROWS }, (_, i) => ({ phone: `+91${nationals[i * 7]!}`, reason: 'bench', source: null, added_at: 0 }))
  for (let i = 0; i < rows.length; i += 500) await rt.store.db.insertInto('dnc').values(rows.slice(i, i + 500)).execute()
  await rt.close()
}

function pass(mode: 'baseline' | 'measured'): Pass {
  const self = fileURLToPath(import.meta.url)
  const r = spawnSync(process.execPath, ['--import', 'tsx', self, '--child', mode, dir], { encoding: 'utf8', env: { ...process.env, LOG_LEVEL: 'silent' } })
  if (r.status !== 0) throw new Error(`${mode} pass failed: ${r.stderr}`)
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Pass
}

const best = (a: Pass | undefined, b: Pass) => (!a || b.ms < a.ms ? b : a)
let base: Pass | undefined
let run: Pass | undefined
let peakRss = 0
for (let i = 0; i < RUNS; i++) {
  base = best(base, pass('baseline'))
  const m = pass('measured')
  peakRss = Math.max(peakRss, m.rssMb)
  run = best(run, m)
}
const fmt = (n: number) => n.toFixed(0).padStart(6)
console.log(`input: ${ROWS.toLocaleString('en')} rows, ${(statSync(input).size / 1e6).toFixed(1)} MB; DNC: ${DNC_ROWS.toLocaleString('en')} numbers (best of ${RUNS}, each pass in its own process)`)
console.log(`baseline (parse + write, no per-row work): ${fmt(base!.ms)} ms  (CPU ${base!.workCpuMs.toFixed(0)} ms; process CPU ${base!.cpuMs.toFixed(0)} ms, peak RSS ${base!.rssMb.toFixed(0)} MB)`)
console.log(`normalize + dedupe + DNC + write:          ${fmt(run!.ms)} ms  (CPU ${run!.workCpuMs.toFixed(0)} ms; ${(run!.ms / base!.ms).toFixed(1)}× baseline; ${Math.round(ROWS / (run!.ms / 1000)).toLocaleString('en')} rows/s)`)
console.log(`  kept ${run!.kept!.toLocaleString('en')}, rejected ${run!.rejects!.toLocaleString('en')} (of which on the DNC list: ${run!.blocked})`)
console.log(`  peak RSS of the measured process (worst of ${RUNS}): ${peakRss.toFixed(0)} MB (${(peakRss / base!.rssMb).toFixed(1)}× the baseline process)`)
console.log(`load average: ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores`)
rmSync(dir, { recursive: true, force: true })

let failed = false
if (run!.ms > BUDGET_MS) {
  console.error(`✗ over budget: ${run!.ms.toFixed(0)} ms > ${BUDGET_MS} ms`)
  failed = true
}
if (peakRss > BUDGET_RSS_MB) {
  console.error(`✗ over budget: peak RSS ${peakRss.toFixed(0)} MB > ${BUDGET_RSS_MB} MB`)
  failed = true
}
if (!failed) console.log(`✓ within budget (≤ ${BUDGET_MS} ms, ≤ ${BUDGET_RSS_MB} MB)`)
process.exit(failed ? 1 : 0)
