import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { tempRecipesDir } from './helpers.ts'

/**
 * A recipe whose run returns but leaves a timer that throws, or a promise that rejects with no handler: `recipes run` and
 * `recipes test` printed the run `succeeded`, then Node's multi-line crash (exit 1, the run still recorded succeeded).
 * Through the executable, which owns its process: one line on stderr saying what the run was recorded as and where the
 * code threw, exit 1; `DEBUG=1` adds the stack.
 */
const root = resolve(import.meta.dirname, '../..')
const folder = tempRecipesDir()
const dataDir = mkdtempSync(join(tmpdir(), 'sb-cli-stray-'))
folder.write('p-timer', `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'leaves a timer that throws', run() { setTimeout(() => { throw new Error('boom from timer') }, 500); return 'ok' } })\n`)
folder.write('p-reject', `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'leaves a rejected promise', run() { void Promise.reject(new Error('boom')); return 'ok' } })\n`)
folder.write('p-during', `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'a timer throws while it runs', async run() { setTimeout(() => { throw new Error('boom meanwhile') }, 50); await new Promise((r) => setTimeout(r, 300)); return 'ok' } })\n`)
afterAll(() => {
  folder.cleanup()
  rmSync(dataDir, { recursive: true, force: true })
})

function cli(args: string[], extra: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, ['src/bin.mjs', ...args], {
    cwd: root,
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: dataDir, RECIPES_DIR: folder.dir, LOG_LEVEL: 'silent', RECIPES_TYPECHECK: 'false', SWITCHBOARD_CONFIG: 'none', ...extra },
    timeout: 60_000,
  })
  return { code: result.status, out: result.stdout, err: result.stderr }
}

const at = (name: string) => `\\(at ${folder.dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/${name}\\.ts:\\d+:\\d+\\)`
const timerLine = new RegExp(`^error: recipe p-timer: its run was recorded succeeded, but code it did not wait for \\(a timer\\?\\) threw: boom from timer ${at('p-timer')}\\n$`)
const rejectLine = new RegExp(`^error: recipe p-reject: its run was recorded succeeded, but a promise it did not wait for was rejected with nothing to handle it: boom ${at('p-reject')}\\n$`)

it('recipes run: a timer or a promise the run left that throws is one line on stderr, exit 1, no stack', () => {
  for (const dry of [[], ['--dry-run']]) {
    const timer = cli(['recipes', 'run', 'p-timer', ...dry])
    expect([timer.code, timer.err]).toEqual([1, expect.stringMatching(timerLine)])
    expect(timer.out).toMatch(/^recipe p-timer: succeeded/)
    const rejected = cli(['recipes', 'run', 'p-reject', ...dry])
    expect([rejected.code, rejected.err]).toEqual([1, expect.stringMatching(rejectLine)])
  }
}, 120_000)

it('recipes test: the same line, exit 1', () => {
  const timer = cli(['recipes', 'test', 'p-timer'])
  expect([timer.code, timer.err]).toEqual([1, expect.stringMatching(timerLine)])
  expect(timer.out).toMatch(/^recipe p-timer: succeeded \(dry run/)
  const rejected = cli(['recipes', 'test', 'p-reject'])
  expect([rejected.code, rejected.err]).toEqual([1, expect.stringMatching(rejectLine)])
}, 120_000)

it('DEBUG=1 adds the stack after the line', () => {
  const timer = cli(['recipes', 'run', 'p-timer', '--dry-run'], { DEBUG: '1' })
  expect(timer.code).toBe(1)
  const [line, ...stack] = timer.err.trim().split('\n')
  expect(line).toMatch(/^error: recipe p-timer: its run was recorded succeeded, but code it did not wait for \(a timer\?\) threw: boom from timer \(at /)
  expect(stack[0]).toBe('Error: boom from timer')
  expect(stack.join('\n')).toContain('p-timer.ts:')
}, 60_000)

// Before, the process ended in the middle of the run, its row left `running` (a dry run's for an hour).
it('a timer that throws while the run still goes: the run finishes and is recorded, then the same line, exit 1', () => {
  const during = cli(['recipes', 'run', 'p-during', '--dry-run'])
  expect([during.code, during.err]).toEqual([1, expect.stringMatching(new RegExp(`^error: recipe p-during: its run was recorded succeeded, but code it did not wait for \\(a timer\\?\\) threw: boom meanwhile ${at('p-during')}\\n$`))])
  expect(during.out).toMatch(/^recipe p-during: succeeded \(dry run/)
  const runs = cli(['recipes', 'runs', 'p-during', '--json'])
  expect((JSON.parse(runs.out) as Array<{ status: string }>).map((r) => r.status)).toEqual(['succeeded'])
}, 60_000)

it('recipes list, check and doctor: a recipe file whose top-level code sets a timer that throws is one line on stderr, exit 1', () => {
  const loading = tempRecipesDir()
  try {
    loading.write('loads-badly', `import { defineRecipe } from 'switchboard'\nsetTimeout(() => { throw new Error('boom at load') }, 0)\nexport default defineRecipe({ description: 'x', schedule: '0 9 * * *', run() {} })\n`)
    const line = new RegExp(`error: recipe code outside its run: code it did not wait for \\(a timer\\?\\) threw: boom at load \\(at ${loading.dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/loads-badly\\.ts:2:\\d+\\)\\n$`)
    for (const args of [['recipes', 'list'], ['recipes', 'check'], ['doctor']]) {
      const result = cli(args, { RECIPES_DIR: loading.dir, PORT: '9' })
      expect([args.join(' '), result.code, result.err]).toEqual([args.join(' '), 1, expect.stringMatching(line)])
      expect(result.err).not.toContain('Node.js v')
    }
  } finally {
    loading.cleanup()
  }
}, 120_000)
