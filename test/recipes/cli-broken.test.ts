import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { tempRecipesDir } from './helpers.ts'

/**
 * A broken recipe beside a healthy one: running the healthy one prints its own output and nothing on
 * stderr (no JSON error lines about other files); `recipes list` names the broken one once, in words.
 * Run as a child process, so stderr is the real one the logger writes to.
 */
const root = resolve(import.meta.dirname, '../..')
let folder: ReturnType<typeof tempRecipesDir>
let dataDir: string

beforeAll(() => {
  folder = tempRecipesDir()
  dataDir = mkdtempSync(join(tmpdir(), 'sb-cli-broken-'))
  folder.write('healthy', `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'ok', run: () => 'all good' })\n`)
  folder.write('broken', `export default { description: 'no run' }\n`)
  folder.write('syntax', `export default defineRecipe({ run( })\n`)
})
afterAll(() => {
  folder.cleanup()
  rmSync(dataDir, { recursive: true, force: true })
})

function cli(...args: string[]) {
  const result = spawnSync(process.execPath, ['src/bin.mjs', ...args], {
    cwd: root,
    encoding: 'utf8',
    // LOG_LEVEL as a user has it (info): the point is what a user sees.
    env: { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: dataDir, RECIPES_DIR: folder.dir, LOG_LEVEL: 'info', RECIPES_TYPECHECK: 'false', SWITCHBOARD_CONFIG: 'none' },
  })
  return { code: result.status, out: result.stdout, err: result.stderr }
}

it('runs a healthy recipe with nothing on stderr about the broken ones', () => {
  const { code, out, err } = cli('recipes', 'run', 'healthy', '--dry-run')
  // The run's own log line may be there (LOG_LEVEL=info, written for a person: `info: … (recipe healthy, …)`); nothing
  // about other files, no warning or error.
  const lines = err.split('\n').filter(Boolean)
  expect(lines.filter((l) => !l.startsWith('info: ') || !l.includes('recipe healthy'))).toEqual([])
  expect(code).toBe(0)
  expect(out).toMatch(/^recipe healthy: succeeded/)
  expect(out).toContain('summary: all good')
})

it('lists each broken recipe once, in words', () => {
  const { code, out, err } = cli('recipes', 'list')
  expect(err).toBe('')
  expect(code).toBe(0)
  expect(out.match(/broken is broken: /g)).toHaveLength(1)
  expect(out).toContain('broken is broken: `run` must be a function')
  expect(out.match(/syntax is broken: failed to load: /g)).toHaveLength(1)
})
