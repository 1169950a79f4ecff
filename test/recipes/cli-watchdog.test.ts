import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterEach, expect, it } from 'vitest'
import { tempRecipesDir } from './helpers.ts'

const ROOT = resolve(import.meta.dirname, '../..')
const BUNDLE = pathToFileURL(join(ROOT, 'src/bundle.mjs')).href

/**
 * The CLI as its executable runs it — the same bundle, which src/bin.mjs starts asking for the watchdog — with short
 * limits: a recipe whose code never returns held `recipes list`, `recipes run` or `doctor` for good, silent, until
 * someone pressed Ctrl-C. (Through tsx instead, each command spent ~1.2 s more loading the sources.)
 */
function cli(args: string[], env: Record<string, string>): Promise<{ code: number | null; out: string; err: string; ms: number }> {
  // Loading gets 3 s: a process's first recipe load brings in jiti's TypeScript transform, which held the event loop
  // past the 1.5 s these tests gave it on a busy two-core machine (a cold checkout, three test workers), and the
  // watchdog then stopped a recipe that loads fine.
  const script = `import { bundledEntries } from ${JSON.stringify(BUNDLE)}
const bundle = await bundledEntries()
if (!bundle) throw new Error('no bundle of the sources could be built')
process.setSourceMapsEnabled(true)
process.env.SWITCHBOARD_PROCESSING_ENTRY = bundle['processing-thread']
const { main } = await import(bundle.cli)
process.exitCode = await main(process.argv.slice(1), { watchRecipeCode: { loadingMs: 3_000, runningMs: 1_500 } })`
  const started = Date.now()
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', SWITCHBOARD_CONFIG: 'none', LOG_LEVEL: 'silent', RECIPES_TYPECHECK: 'false', ...env },
  })
  let out = ''
  let err = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (err += d.toString()))
  // Bounded: a command the watchdog failed to end is killed, and the test says so.
  const kill = setTimeout(() => child.kill('SIGKILL'), 30_000)
  return new Promise((done) => child.on('close', (code) => (clearTimeout(kill), done({ code, out, err, ms: Date.now() - started }))))
}

let cleanups: Array<() => void> = []
afterEach(() => {
  for (const fn of cleanups) fn()
  cleanups = []
})

function setup() {
  const folder = tempRecipesDir()
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-cli-watchdog-'))
  cleanups.push(folder.cleanup, () => rmSync(dataDir, { recursive: true, force: true }))
  return { folder, env: { DATA_DIR: dataDir, RECIPES_DIR: folder.dir } }
}

it('a recipe file whose top-level code never returns ends the command with one line naming it, exit 1', async () => {
  const { folder, env } = setup()
  folder.write('fine', `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'loads', run: () => 'ok' })\n`)
  folder.write('spins', `import { defineRecipe } from 'switchboard'\nfor (;;) {}\nexport default defineRecipe({ description: 'never loads', run: () => 'x' })\n`)
  // `recipes test` works in a data folder of its own under the system's temporary folder: gone after the command, even
  // one the watchdog ended (it was left behind, one a run).
  const tmp = mkdtempSync(join(tmpdir(), 'sb-cli-watchdog-tmp-'))
  cleanups.push(() => rmSync(tmp, { recursive: true, force: true }))
  for (const command of [['recipes', 'list'], ['recipes', 'check'], ['recipes', 'test', 'spins'], ['doctor']]) {
    const r = await cli(command, command[1] === 'test' ? { ...env, TMPDIR: tmp } : env)
    expect([command.join(' '), r.code, r.err.trim().split('\n').at(-1)]).toEqual([
      command.join(' '),
      1,
      expect.stringMatching(/^error: recipe file spins\.ts never finished loading: its top-level code held this command for \d+ s without returning \(a synchronous loop\?\); fix the file and run the command again$/),
    ])
  }
  expect(readdirSync(tmp).filter((name) => name.startsWith('sb-recipe-test-'))).toEqual([])
}, 120_000)

it('a run whose code never returns ends `recipes run` with one line, exit 1; a command whose recipes behave is not held by the watchdog', async () => {
  const { folder, env } = setup()
  folder.write('spins', `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'never returns', run() { for (;;) {} } })\n`)
  folder.write('fine', `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'loads', run: () => 'ok' })\n`)
  const stuck = await cli(['recipes', 'run', 'spins'], env)
  expect([stuck.code, stuck.err.trim().split('\n').at(-1)]).toEqual([1, expect.stringMatching(/^error: recipe code held this command for \d+ s without returning \(a synchronous loop in run\?\); stopped it$/)])
  const fine = await cli(['recipes', 'run', 'fine'], env)
  expect([fine.code, fine.err]).toEqual([0, ''])
  expect(fine.out).toContain('succeeded')
}, 120_000)
