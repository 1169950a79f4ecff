import { execFile } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterEach, expect, it } from 'vitest'
import { cliWithWatchdog } from './cli-with-watchdog.ts'
import { tempRecipesDir } from './helpers.ts'

/**
 * The CLI as its executable runs it, with short watchdog limits: a recipe whose code never returns held `recipes list`,
 * `recipes run` or `doctor` for good, silent, until someone pressed Ctrl-C.
 */
const cli = (args: string[], env: Record<string, string>) => cliWithWatchdog(args, env, { loadingMs: 3_000, runningMs: 1_500 })

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
  for (const command of [['recipes', 'list'], ['recipes', 'check'], ['recipes', 'test', 'spins'], ['recipes', 'new', 'fresh'], ['doctor']]) {
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

it('`recipes test` stops a run that never returns after the configured limit, as `recipes run` does (it waited 60 s whatever RECIPE_TIMEOUT_SECONDS)', async () => {
  const { folder, env } = setup()
  folder.write('spins', `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'never returns', run() { for (;;) {} } })\n`)
  const tmp = mkdtempSync(join(tmpdir(), 'sb-cli-watchdog-tmp-'))
  cleanups.push(() => rmSync(tmp, { recursive: true, force: true }))
  // RECIPE_TIMEOUT_SECONDS=1: the service stops such a thread after 10 s, its least; the command is killed at 30 s.
  const stuck = await cliWithWatchdog(['recipes', 'test', 'spins'], { ...env, TMPDIR: tmp, RECIPE_TIMEOUT_SECONDS: '1' }, 'configured')
  expect([stuck.code, stuck.err.trim().split('\n').at(-1)]).toEqual([1, expect.stringMatching(/^error: recipe code held this command for \d+ s without returning \(a synchronous loop in run\?\); stopped it$/)])
}, 60_000)

it("the command's own start is not recipe code: held before any recipe file loads, it is not stopped; a file's loop after is", async () => {
  // On a busy machine a command's start (configuration, the database, migrations) held the event loop for 2 s, and the
  // watchdog, given 1.5 s for recipe code, stopped `recipes list` before it had loaded a recipe, blaming "recipe code".
  const root = resolve(import.meta.dirname, '../..')
  const watchdog = pathToFileURL(join(root, 'src/recipes/cli-watchdog.ts')).href
  const script = `import { startCliWatchdog } from ${JSON.stringify(watchdog)}
const watchdog = startCliWatchdog({ loadingMs: 1000, runningMs: 1000 })
const hold = (ms) => { const end = Date.now() + ms; while (Date.now() < end) {} }
hold(2500)
await new Promise((r) => setTimeout(r, 300))
process.stdout.write('started\\n')
watchdog.watch.loading('/recipes/spins.ts')
hold(60000)`
  const { code, out, err } = await new Promise<{ code: number | null; out: string; err: string }>((done) => {
    const child = execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: root, timeout: 30_000 }, (_, stdout, stderr) => done({ code: child.exitCode, out: stdout, err: stderr }))
  })
  expect([code, out, err.trim().split('\n').at(-1)]).toEqual([
    1,
    'started\n',
    expect.stringMatching(/^error: recipe file spins\.ts never finished loading: its top-level code held this command for \d+ s without returning/),
  ])
}, 60_000)
