import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { changedFiles } from '../../src/recipes/watch-folder.ts'
import { tempRecipesDir } from './helpers.ts'

/**
 * `recipes check --watch` and `recipes test --watch`: what a recipe's author runs after each save, kept running. A new
 * `recipes check` parses switchboard's types and @types/node again (a few seconds); the watching one keeps what has not
 * changed, so a save is answered in a fraction of a second. Through the CLI as a user runs it, in a process of its own,
 * stopped by SIGINT.
 */
const BIN = resolve(import.meta.dirname, '../../src/bin.mjs')

const RECIPE = `import { defineRecipe } from 'switchboard'
import { greeting } from './lib/greeting.ts'

export default defineRecipe({
  description: 'greets',
  schedule: '0 8 * * *',
  run: () => greeting('team').toUpperCase(),
})
`
const HELPER = `export function greeting(name: string): string {
  return 'hello ' + name
}
`

interface Watching {
  child: ChildProcess
  stdout(): string
  stderr(): string
  /**
   * Waits until stdout has a new line matching `pattern` after what it held when called; returns the output since.
   * `timeout` for the first check: a process starting and a type check parsing every declaration from cold.
   */
  next(pattern: RegExp, timeout?: number): Promise<string>
  stop(): Promise<number | null>
}

/**
 * The first check's wait: a CLI process starting and TypeScript parsing switchboard's and Node's declarations from cold,
 * 3–5 s on a quiet machine and past vitest's 10 s on a loaded one running the rest of the suite beside it.
 */
const FIRST_CHECK_MS = 45_000
/** A test's limit: its first check and the checks again after each save. */
const WATCH_TEST_MS = 90_000

let folder: ReturnType<typeof tempRecipesDir> | undefined
let dataDir: string | undefined
let running: ChildProcess | undefined
const cleanups: Array<() => void> = []
afterEach(() => {
  if (running && running.exitCode === null) running.kill('SIGKILL')
  for (const cleanup of cleanups.splice(0)) cleanup()
  folder?.cleanup()
  if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  folder = dataDir = running = undefined
})

function watchCheck(args: string[]): Watching {
  return watchCommand(['check', '--watch', ...args])
}

function watchCommand(args: string[]): Watching {
  dataDir = mkdtempSync(join(tmpdir(), 'sb-watch-'))
  const child = spawn(process.execPath, [BIN, 'recipes', ...args], {
    env: { ...process.env, DATA_DIR: dataDir, RECIPES_DIR: folder!.dir, LOG_LEVEL: 'silent', WEBHOOK_SECRET: 'whsec_x' },
    cwd: folder!.dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  running = child
  let out = ''
  let err = ''
  child.stdout!.on('data', (chunk: Buffer) => void (out += chunk.toString('utf8')))
  child.stderr!.on('data', (chunk: Buffer) => void (err += chunk.toString('utf8')))
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    async next(pattern, timeout) {
      const from = out.length
      await expect.poll(() => (child.exitCode === null ? pattern.test(out.slice(from)) : `exited ${child.exitCode}: ${out}${err}`), timeout ? { timeout } : {}).toBe(true)
      return out.slice(from)
    },
    async stop() {
      child.kill('SIGINT')
      return new Promise((done) => (child.exitCode !== null ? done(child.exitCode) : child.once('exit', (code) => done(code))))
    },
  }
}

describe('recipes check --watch', () => {
  it('checks again on every save — the recipe, a helper in lib/, a new file — and stops on Ctrl-C with exit 0', async () => {
    folder = tempRecipesDir()
    folder.write('greet', RECIPE)
    folder.write('lib/greeting', HELPER)
    const watching = watchCheck([])
    const first = await watching.next(/watching .* for changes \(Ctrl-C to stop\)/, FIRST_CHECK_MS)
    expect(first).toContain('1 recipe checked: no type errors')

    // The recipe: a type error at its line and column.
    folder.write('greet', RECIPE.replace("greeting('team')", 'greeting(42)'))
    const typeError = await watching.next(/type error in 1 file/)
    expect(typeError).toMatch(/greet\.ts changed: checking again/)
    expect(typeError).toMatch(/greet\.ts:7:23 Argument of type 'number' is not assignable to parameter of type 'string'/)

    // Fixed, then a helper in a sub-folder (the folder's watch does not cover it: the poll does) breaks the recipe.
    folder.write('greet', RECIPE)
    expect(await watching.next(/no type errors/)).toContain('1 recipe checked: no type errors')
    folder.write('lib/greeting', HELPER.replace('): string {', '): number {'))
    const helperError = await watching.next(/type errors? in/)
    expect(helperError).toMatch(/lib\/greeting\.ts changed: checking again/)
    expect(helperError).toMatch(/lib\/greeting\.ts:2:3 Type 'string' is not assignable to type 'number'/)
    folder.write('lib/greeting', HELPER)
    await watching.next(/1 recipe checked: no type errors/)

    // A new recipe the loader refuses, then removed.
    folder.write('morning', `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'x', schedule: '0 8 * * *', run: () => 1, timeZone: 'UTC' } as never)\n`)
    const broken = await watching.next(/the service would not load/)
    expect(broken).toMatch(/morning\.ts: broken: unknown key `timeZone`: did you mean `timezone`\?/)
    unlinkSync(join(folder.dir, 'morning.ts'))
    expect(await watching.next(/no type errors/)).toMatch(/morning\.ts changed: checking again\n1 recipe checked: no type errors/)

    expect(await watching.stop()).toBe(0)
    expect(watching.stdout()).toMatch(/stopped watching\n$/)
  }, WATCH_TEST_MS)

  it('with --json prints each check as one JSON object a line, the lines about watching on stderr; a recipe given by path is watched in its own folder', async () => {
    // RECIPES_DIR is another, empty folder: the recipe is named by its path.
    folder = tempRecipesDir()
    const elsewhere = tempRecipesDir()
    cleanups.push(() => elsewhere.cleanup())
    const file = elsewhere.write('greet', RECIPE)
    elsewhere.write('lib/greeting', HELPER)
    const watching = watchCheck([file, '--json'])
    await watching.next(/\n$/, FIRST_CHECK_MS)
    await expect.poll(() => watching.stderr()).toMatch(/watching .* for changes/)
    elsewhere.write('greet', RECIPE.replace("greeting('team')", 'greeting(42)'))
    await watching.next(/"errors":\[\{/)
    expect(await watching.stop()).toBe(0)
    const checks = watching.stdout().trim().split('\n').map((line) => JSON.parse(line) as { files: string[]; errors: Array<{ line: number; column: number; message: string }>; broken: unknown[] })
    expect(checks).toHaveLength(2)
    // The file checked, where it is (it was named as if in RECIPES_DIR).
    expect(checks[0]).toMatchObject({ files: [file], errors: [], broken: [] })
    expect(checks[1]!.errors[0]).toMatchObject({ file })
    expect(checks[1]!.errors).toEqual([expect.objectContaining({ line: 7, column: 23, message: expect.stringMatching(/^Argument of type 'number'/) })])
    expect(watching.stderr()).toMatch(/greet\.ts changed: checking again\n[\s\S]*stopped watching\n$/)
  }, WATCH_TEST_MS)

  it('ends at once, exit 2, for a name that is no recipe', async () => {
    folder = tempRecipesDir()
    folder.write('greet', RECIPE)
    const watching = watchCheck(['gret'])
    const code = await new Promise<number | null>((done) => watching.child.once('exit', (c) => done(c)))
    expect(code).toBe(2)
    expect(watching.stderr()).toMatch(/gret/)
  })
})

describe('recipes test --watch', () => {
  const FOLLOW_UP = `import { defineRecipe } from 'switchboard'
import { label } from './lib/label.ts'

export default defineRecipe({
  description: 'counts the missed calls of a batch',
  on: ['call.no_answer'],
  run: (ctx) => ({ missed: ctx.trigger.events?.length ?? 0, label: label() }),
})
`
  const event = (n: number) => ({
    event_id: `evt_watch_${n}`,
    event_type: 'call.no_answer',
    timestamp: '2026-01-15T10:00:00Z',
    data: {
      call: {
        agent_id: 101, conversation_id: `conv_watch_${n}`, status: 'no_answer', to_phone: `+91987654321${n}`, call_parameters: { customer_phone: `+91987654321${n}` },
        duration_seconds: null, started_at: '2026-01-15T09:59:20Z', ended_at: '2026-01-15T10:00:00Z', failure_reason: null, from_phone: '+918035550101', recording_url: null, trace_id: `trace-watch-${n}`,
      },
      results: {}, retry: null, retry_context: null, transcript: null,
    },
  })

  it('runs it again on a save of the recipe, its helper or the --events file; a type error is said and the watch goes on', async () => {
    folder = tempRecipesDir()
    folder.write('missed', FOLLOW_UP)
    folder.write('lib/label', `export const label = (): string => 'first'\n`)
    const events = join(folder.dir, '..', `${folder.dir.split('/').pop()}-events.json`)
    writeFileSync(events, JSON.stringify([event(1)]))
    try {
      const watching = watchCommand(['test', 'missed', '--events', events, '--watch'])
      const first = await watching.next(/watching .* for changes \(Ctrl-C to stop\)/, FIRST_CHECK_MS)
      expect(first).toMatch(/^recipe missed: succeeded/m)
      expect(first).toMatch(/^summary: missed 1 · label first$/m)

      // The fixture: two events now.
      writeFileSync(events, JSON.stringify([event(1), event(2)]))
      const more = await watching.next(/^summary: .*$/m)
      expect(more).toMatch(/events\.json changed: testing again/)
      expect(more).toMatch(/^summary: missed 2 · label first$/m)

      // A helper in lib/.
      folder.write('lib/label', `export const label = (): string => 'second'\n`)
      expect(await watching.next(/^summary: .*$/m)).toMatch(/^summary: missed 2 · label second$/m)

      // A type error: the service would not run it, so neither does the test; said, and the next save runs it again.
      folder.write('missed', FOLLOW_UP.replace('label: label()', 'label: label(42)'))
      expect(await watching.next(/^error: /m)).toMatch(/^error: recipe "missed" is broken: type error at .*missed\.ts:7:\d+ Expected 0 arguments, but got 1\./m)
      folder.write('missed', FOLLOW_UP)
      expect(await watching.next(/^summary: .*$/m)).toMatch(/^summary: missed 2 · label second$/m)

      expect(await watching.stop()).toBe(0)
      expect(watching.stdout()).toMatch(/stopped watching\n$/)
    } finally {
      rmSync(events, { force: true })
    }
  }, WATCH_TEST_MS)
})

describe('changedFiles', () => {
  const line = (path: string, size: number, mtime: number) => `${path}\0${size}\0${mtime}`
  it('names the files added, removed and changed (size or time), in path order', () => {
    const before = [line('/r/a.ts', 10, 1), line('/r/b.ts', 20, 2), line('/r/lib/c.ts', 30, 3)].join('\n')
    const after = [line('/r/a.ts', 10, 1), line('/r/b.ts', 20, 5), line('/r/d.ts', 1, 1), line('/r/lib/c.ts', 31, 3)].join('\n')
    expect(changedFiles(before, after)).toEqual(['/r/b.ts', '/r/d.ts', '/r/lib/c.ts'])
    expect(changedFiles(after, before)).toEqual(['/r/b.ts', '/r/d.ts', '/r/lib/c.ts'])
    expect(changedFiles(before, before)).toEqual([])
    expect(changedFiles('', before)).toEqual(['/r/a.ts', '/r/b.ts', '/r/lib/c.ts'])
  })
})
