import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterEach, expect, it } from 'vitest'
import { tempRecipesDir } from './helpers.ts'

const ROOT = resolve(import.meta.dirname, '../..')
const BUNDLE = pathToFileURL(join(ROOT, 'src/bundle.mjs')).href

/**
 * The CLI as its executable runs it (the bundle src/bin.mjs starts, asking for the watchdog), with a short watchdog
 * limit and the default recipe time limit (300 s), so the run's own time-out never closes its row: only the watchdog's
 * path can. A dry run the watchdog stopped read `running (dry run)` for an hour, while a real run was closed only when
 * its time-out timer happened to fire before the process ended.
 */
function cli(args: string[], env: Record<string, string>): Promise<{ code: number | null; out: string; err: string }> {
  // Loading gets 5 s: a process's first recipe load brings in jiti's TypeScript transform, which held the event loop
  // past the 1.5 s these tests gave it on a busy two-core machine (a cold checkout, three test workers), and the
  // watchdog then stopped a recipe that loads fine.
  const script = `import { bundledEntries } from ${JSON.stringify(BUNDLE)}
const bundle = await bundledEntries()
if (!bundle) throw new Error('no bundle of the sources could be built')
process.setSourceMapsEnabled(true)
process.env.SWITCHBOARD_PROCESSING_ENTRY = bundle['processing-thread']
const { main } = await import(bundle.cli)
process.exitCode = await main(process.argv.slice(1), { watchRecipeCode: { loadingMs: 5_000, runningMs: 1_500 } })`
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', SWITCHBOARD_CONFIG: 'none', LOG_LEVEL: 'silent', RECIPES_TYPECHECK: 'false', ...env },
  })
  let out = ''
  let err = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (err += d.toString()))
  const kill = setTimeout(() => child.kill('SIGKILL'), 30_000)
  return new Promise((done) => child.on('close', (code) => (clearTimeout(kill), done({ code, out, err }))))
}

let cleanups: Array<() => void> = []
afterEach(() => {
  for (const fn of cleanups) fn()
  cleanups = []
})

it('a run the watchdog stops — dry or real — is recorded failed, not left running', async () => {
  const folder = tempRecipesDir()
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-cli-watchdog-runs-'))
  cleanups.push(folder.cleanup, () => rmSync(dataDir, { recursive: true, force: true }))
  const env = { DATA_DIR: dataDir, RECIPES_DIR: folder.dir }
  folder.write('p-spin', `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'spins', run() { const t = Date.now(); while (Date.now() - t < 60_000) {} } })\n`)
  for (const dry of [true, false]) {
    const stuck = await cli(['recipes', 'run', 'p-spin', ...(dry ? ['--dry-run'] : [])], env)
    expect([dry, stuck.code, stuck.err.trim().split('\n').at(-1)]).toEqual([dry, 1, expect.stringMatching(/^error: recipe code held this command for \d+ s without returning \(a synchronous loop in run\?\); stopped it$/)])
  }
  const runs = await cli(['recipes', 'runs', 'p-spin', '--json'], env)
  expect(runs.code).toBe(0)
  const listed = (JSON.parse(runs.out) as Array<{ dry_run: boolean; status: string; ended_at: string | null; error: string | null }>).map((r) => [r.dry_run, r.status, r.ended_at === null, r.error])
  const stopped = expect.stringMatching(/^stopped: its code held the command for \d+ s without returning \(a synchronous loop in run\?\)$/)
  expect(listed).toEqual([
    [false, 'failed', false, stopped],
    [true, 'failed', false, stopped],
  ])
}, 120_000)
