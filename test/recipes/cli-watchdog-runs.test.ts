import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { cliWithWatchdog } from './cli-with-watchdog.ts'
import { tempRecipesDir } from './helpers.ts'

/**
 * The CLI as its executable runs it, with a short watchdog limit and the default recipe time limit (300 s), so the run's
 * own time-out never closes its row: only the watchdog's path can. A dry run the watchdog stopped read `running (dry
 * run)` for an hour, while a real run was closed only when its time-out timer happened to fire before the process ended.
 */
const cli = (args: string[], env: Record<string, string>) => cliWithWatchdog(args, env, { loadingMs: 5_000, runningMs: 1_500 })

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
