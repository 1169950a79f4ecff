import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { childEnv, ROOT } from './processes.ts'

/**
 * `doctor | head -1`: a reader that stops reading (head, a pager quit early) closes the command's stdout, and the next
 * write failed with EPIPE — an unhandled 'error' event: exit 1 and Node's stack trace. Closed output only means nobody
 * reads any more: the command ends as it would have, with its own exit code, and says nothing about it.
 */
let dataDir: string
beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'sb-closed-stdout-'))
  // A database to list (a listing refuses a DATA_DIR with none: src/cli-stored-data.ts).
  expect(spawnSync(process.execPath, [join(ROOT, 'src/bin.mjs'), 'migrate'], { cwd: ROOT, env: childEnv({ DATA_DIR: dataDir }) }).status).toBe(0)
}, 60_000)
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

/** Runs the real bin; with `closeStdout`, its stdout's read end is closed before it writes anything. */
function switchboard(args: string[], closeStdout: boolean): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'src/bin.mjs'), ...args], { cwd: ROOT, env: childEnv({ DATA_DIR: dataDir }), stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  if (closeStdout) child.stdout.destroy()
  else child.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })))
}

it.each(['doctor', 'events list', 'events list --json', 'help'])('%s with its stdout closed ends quietly, with its own exit code', async (command) => {
  const args = command.split(' ')
  const open = await switchboard(args, false)
  expect(open.stdout).not.toBe('')
  const closed = await switchboard(args, true)
  expect(closed.stderr).not.toMatch(/EPIPE|Unhandled 'error' event|^\s+at /m)
  expect(closed.stderr).toBe(open.stderr)
  expect(closed.code).toBe(open.code)
}, 60_000)

// `recipes check --watch | head -1`: once head has gone, the watch went on for good, its output dropped — a process
// nobody could see, holding its files open until killed. It ends at the first write nobody reads, with exit 0.
it('recipes check --watch ends, exit 0, once whoever read its output has gone', async () => {
  const recipes = mkdtempSync(join(tmpdir(), 'sb-closed-watch-'))
  try {
    const file = join(recipes, 'hello.ts')
    writeFileSync(file, `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'x', schedule: '0 9 * * *', run() {} })\n`)
    const child = spawn(process.execPath, [join(ROOT, 'src/bin.mjs'), 'recipes', 'check', '--watch'], { cwd: ROOT, env: childEnv({ DATA_DIR: dataDir, RECIPES_DIR: recipes, RECIPES_TYPECHECK: 'false' }), stdio: ['ignore', 'pipe', 'pipe'] })
    const closed = new Promise<number | null>((resolve) => child.once('close', resolve))
    let stderr = ''
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
    // The first check is printed, then the watch starts: the reader takes that much and goes.
    await new Promise<void>((resolve) => child.stdout.on('data', (c: Buffer) => c.toString().includes('for changes') && resolve()))
    child.stdout.destroy()
    // Saves go on (an editor's): the next check is written to nobody.
    let edits = 0
    const editing = setInterval(() => writeFileSync(file, `${readFileSync(file, 'utf8')}// edit ${++edits}\n`), 300)
    try {
      expect(await closed).toBe(0)
    } finally {
      clearInterval(editing)
      if (child.exitCode === null) child.kill('SIGKILL')
    }
    expect(stderr).not.toMatch(/EPIPE|Unhandled 'error' event|^\s+at /m)
  } finally {
    rmSync(recipes, { recursive: true, force: true })
  }
}, 60_000)
