import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { main } from '../../src/cli.ts'
import { BrokenRecipeError, createRecipeEngine, type RecipeEngine } from '../../src/recipes/engine.ts'
import { createTypeVerdicts, typeCheckThreadId, type TypeVerdicts } from '../../src/recipes/type-verdicts.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { packagesLoadedBy } from '../helpers/packages-loaded.ts'
import { tempRecipesDir } from './helpers.ts'

const ROOT = resolve(fileURLToPath(import.meta.url), '../../..')

/**
 * Recipes are type-checked against the service's own API: `recipes check` prints `file:line:col message`
 * for a folder anywhere (these folders are temp folders outside the checkout), and the running service
 * reports a recipe with a type error as broken — at load and after an edit — instead of running it.
 */
const TYPO = `import { defineRecipe } from 'switchboard'

export default defineRecipe({
  description: 'looks up a conversation the wrong way',
  async run(ctx) {
    const missed = await ctx.data.conversation({ status: 'no_answer' })
    return { missed }
  },
})
`
const FIXED = TYPO.replace("ctx.data.conversation({ status: 'no_answer' })", "ctx.data.conversations({ status: 'no_answer' })")
// What Node has beside its modules (fetch, URL, TextEncoder, AbortSignal, structuredClone) type-checks; the browser's
// `document` does not exist in Node and is an error, not something to find at run time.
const HEALTHY = `import { defineRecipe } from 'switchboard'
import { join } from 'node:path'
export default defineRecipe({
  description: 'fine',
  async run(ctx) {
    const url = new URL('/v1/agents', 'http://127.0.0.1:1')
    const bytes = new TextEncoder().encode(url.host).byteLength
    const probe: typeof fetch = fetch
    return { path: join(ctx.config.dataDir, 'x'), bytes, signal: AbortSignal.timeout(1000).aborted, copy: structuredClone({ a: 1 }), fetches: typeof probe }
  },
})
`
const BROWSER_ONLY = `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'reads a page title', run: () => document.title })
`

let folder: ReturnType<typeof tempRecipesDir>
let dataDir: string
beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'sb-check-'))
})
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

async function cli(...argv: string[]) {
  let out = ''
  let err = ''
  const code = await main(argv, { env: { DATA_DIR: dataDir, RECIPES_DIR: folder.dir, LOG_LEVEL: 'silent' }, stdout: (t) => void (out += t), stderr: (t) => void (err += t) })
  return { code, out, err }
}

/** Runs `use` with a TypeVerdicts for `options`, closed afterwards whatever happens. */
async function withVerdicts<T>(options: Parameters<typeof createTypeVerdicts>[0], use: (verdicts: TypeVerdicts) => Promise<T> | T): Promise<T> {
  const verdicts = createTypeVerdicts(options)
  try {
    return await use(verdicts)
  } finally {
    await verdicts.close()
  }
}

/** Writes `text` to `lib/<name>` of the recipes folder `dir` (the folder made if needed); returns its path. */
function writeHelper(dir: string, name: string, text: string): string {
  const file = join(dir, 'lib', name)
  mkdirSync(dirname(file), { recursive: true })
  writeFileSync(file, text)
  return file
}

describe('recipes check', () => {
  beforeEach(() => {
    folder = tempRecipesDir()
  })
  afterEach(() => folder.cleanup())

  it('prints file:line:col and the message for the typo, exits 1; a clean folder exits 0', async () => {
    const file = folder.write('missed-calls', TYPO)
    folder.write('healthy', HEALTHY)
    const browser = folder.write('browser-only', BROWSER_ONLY)
    const bad = await cli('recipes', 'check')
    expect(bad.code).toBe(1)
    expect(bad.out).toContain(`${file}:6:48 Argument of type '{ status: string; }' is not assignable to parameter of type 'string'.`)
    expect(bad.out).toContain(`${browser}:2:77 Cannot find name 'document': recipes run in Node, which has no browser globals\n`)
    expect(bad.out).toMatch(/2 type errors in 2 files\n$/)
    rmSync(browser)
    const one = await cli('recipes', 'check', 'healthy')
    expect(one).toMatchObject({ code: 0, out: '1 recipe checked: no type errors\n' })
    folder.write('missed-calls', FIXED)
    expect(await cli('recipes', 'check')).toMatchObject({ code: 0, out: '2 recipes checked: no type errors\n' })
    expect(await cli('recipes', 'check', 'nope')).toMatchObject({ code: 2, err: expect.stringMatching(/^error: no recipe named "nope"/) })
  })

  it('names a misspelt member of an event or of a call request — free-form records (results, call_parameters) stay open', async () => {
    // The provider's types are loose at run time (a field it adds must not break a recipe), and their index signature
    // made `event.data.call.stauts` an `unknown` no check refused: always false, silently (a recipe author's probe).
    const file = folder.write('typos', `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'typos',
  on: ['call.no_answer'],
  async run(ctx) {
    let n = 0
    for (const { event } of ctx.trigger.events ?? []) {
      if (event.data.call.stauts === 'no_answer') n++
      if (event.data.results?.intent === 'x' || event.data.call.call_parameters.name === 'Asha') n++
    }
    await ctx.client.createCall({ agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543212' }], schedule_for: '2026-12-01T10:00:00+05:30' })
    return { n }
  },
})
`)
    const checked = await cli('recipes', 'check')
    expect(checked.code).toBe(1)
    expect(checked.out).toContain(`${file}:8:27 Property 'stauts' does not exist on type`)
    expect(checked.out).toMatch(/Did you mean 'status'\?\n/)
    expect(checked.out).toMatch(new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:11:\\d+ Object literal may only specify known properties, but 'schedule_for' does not exist in type .*Did you mean to write 'scheduled_for'\\?`))
    expect(checked.out).toMatch(/2 type errors in 1 file\n$/)
  })
})

describe('the service', () => {
  let rt: TestRuntime
  let engine: RecipeEngine
  beforeEach(async () => {
    folder = tempRecipesDir()
    rt = await createTestRuntime({ env: { RECIPES_DIR: folder.dir, RECIPES_TYPECHECK: 'true' } })
    engine = createRecipeEngine(rt)
  })
  afterEach(async () => {
    await engine.stop()
    await rt.close()
    folder.cleanup()
  })

  it('reports a recipe with a type error as broken (first error) at load and after an edit, and never runs it', async () => {
    const file = folder.write('missed-calls', TYPO)
    folder.write('healthy', HEALTHY)
    await engine.start()
    const broken = (await engine.list()).find((r) => r.name === 'missed-calls')!
    expect(broken.broken).toBe(`type error at ${file}:6:48 Argument of type '{ status: string; }' is not assignable to parameter of type 'string'.`)
    await expect(engine.run('missed-calls', { dryRun: true })).rejects.toBeInstanceOf(BrokenRecipeError)
    expect((await engine.run('healthy', { dryRun: true })).status).toBe('succeeded')

    // Hot reload (what the folder watch calls): the fix is picked up, the verdict comes from the cache next time.
    folder.write('missed-calls', FIXED)
    await engine.reload()
    expect((await engine.list()).find((r) => r.name === 'missed-calls')!.broken).toBeNull()
    expect((await engine.run('missed-calls', { dryRun: true })).status).toBe('succeeded')
    folder.write('missed-calls', TYPO)
    await engine.reload()
    expect((await engine.list()).find((r) => r.name === 'missed-calls')!.broken).toMatch(/^type error at .*:6:48 /)
  })
})

describe('start-up cost', () => {
  it('the service does not load TypeScript’s compiler on its start path (only the type-check thread does), nor jiti (only loading a recipe or a config file does)', () => {
    // A child process: this one has loaded the compiler for the tests above.
    const loaded = packagesLoadedBy(["await import('./src/cli.ts')", "await import('./src/server.ts')", "await import('./src/processing-host.ts')"])
    expect(loaded.filter((name) => name === 'typescript' || name === 'jiti')).toEqual([])
  })
})

describe('cached verdicts', () => {
  it('a helper in a sub-folder (lib/) is part of every recipe\'s verdict: fixing it is seen after a restart', async () => {
    const folder = tempRecipesDir()
    const cacheFile = join(dataDir, 'recipe-types-lib.json')
    const USES_LIB = `import { defineRecipe } from 'switchboard'
import { missedFilter } from './lib/filters.ts'
export default defineRecipe({
  description: 'uses a helper',
  async run(ctx) {
    return { missed: (await ctx.data.conversations(missedFilter())).length }
  },
})
`
    try {
      const recipe = folder.write('uses-lib', USES_LIB)
      writeHelper(folder.dir, 'filters.ts', `export const missedFilter = () => ({ status: 42 })\n`)
      await withVerdicts({ cacheFile }, async (first) => {
        expect((await first.check([recipe])).get(recipe)?.message).toMatch(/not assignable/)
      })
      // The helper is fixed; the recipe file itself is unchanged. A restarted service must not keep the old verdict.
      writeHelper(folder.dir, 'filters.ts', `export const missedFilter = () => ({ status: 'no_answer' as const })\n`)
      await withVerdicts({ cacheFile }, async (restarted) => {
        expect(restarted.cached([recipe]).get(recipe)).toBeUndefined()
        expect((await restarted.check([recipe])).get(recipe)).toBeUndefined()
      })
    } finally {
      folder.cleanup()
    }
  }, 60_000)

  it('a helper imported dynamically (`await import(\'./lib/…\')`) is part of the recipe\'s verdict, as `recipes check` reports it', async () => {
    const folder = tempRecipesDir()
    const cacheFile = join(dataDir, 'recipe-types-dynamic.json')
    const LATE = `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'loads its helper when it runs',
  async run(ctx) {
    const { missedFilter } = await import('./lib/late.ts')
    return { missed: (await ctx.data.conversations(missedFilter())).length }
  },
})
`
    try {
      const recipe = folder.write('late-helper', LATE)
      // The recipe's own file is clean; the helper's error is its own.
      const lib = writeHelper(folder.dir, 'late.ts', `const limit: number = 'ten'\nexport const missedFilter = () => ({ status: 'no_answer' as const, limit })\n`)
      const verdict = await withVerdicts({ cacheFile }, async (verdicts) => (await verdicts.check([recipe])).get(recipe))
      expect(verdict?.file).toBe(resolve(lib))
      expect(verdict?.message).toMatch(/not assignable to type 'number'/)
    } finally {
      folder.cleanup()
    }
  }, 60_000)

  it("a verdict one process checked answers another with its own data folder, from the installation's file", async () => {
    const folder = tempRecipesDir()
    const dir = mkdtempSync(join(tmpdir(), 'sb-shared-verdicts-'))
    const shared = join(dir, 'installation.json')
    try {
      const typo = folder.write('typo', TYPO)
      // Another process checks it (its own data folder: none), and writes its verdict to the shared file.
      const api = pathToFileURL(join(ROOT, 'src/recipes/type-verdicts.ts')).href
      const script = join(dir, 'check.mts')
      writeFileSync(script, [
        `const { createTypeVerdicts } = await import(${JSON.stringify(api)})`,
        `const verdicts = createTypeVerdicts({ sharedFile: ${JSON.stringify(shared)} })`,
        `await verdicts.check([${JSON.stringify(typo)}])`,
        'await verdicts.close()',
      ].join('\n'))
      execFileSync(process.execPath, ['--import', 'tsx', script], { cwd: ROOT, stdio: 'pipe', timeout: 60_000 })
      const written = JSON.parse(readFileSync(shared, 'utf8')) as { entries: Record<string, { message: string } | null> }
      const [key, verdict] = Object.entries(written.entries).find(([, v]) => v !== null && /status/.test(v.message)) ?? []
      expect(verdict).toBeDefined()
      // Marked, so an answer taken from the file is told apart from one checked again here (this process never checked it).
      written.entries[key!] = { ...verdict!, message: 'from the installation file' }
      writeFileSync(shared, JSON.stringify(written))
      const cacheFile = join(dir, 'data-folder.json')
      const dataFolderVerdicts = () => Object.values((JSON.parse(readFileSync(cacheFile, 'utf8')) as { entries: Record<string, { message: string } | null> }).entries)
      await withVerdicts({ cacheFile, sharedFile: shared }, async (here) => {
        expect(here.cached([typo]).get(typo)?.message).toBe('from the installation file')
        // Kept in this data folder's file at once (a start whose verdicts were all known never calls check).
        expect(dataFolderVerdicts()).toEqual([expect.objectContaining({ message: 'from the installation file' })])
        expect((await here.check([typo])).get(typo)?.message).toBe('from the installation file')
      })
      // Copied into this data folder's own file, which is asked first.
      expect(dataFolderVerdicts()).toEqual([expect.objectContaining({ message: 'from the installation file' })])
    } finally {
      folder.cleanup()
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)
})

describe('the type-check thread', () => {
  it('ends once idle (it holds TypeScript: hundreds of MB) and starts again for the next check', async () => {
    const folder = tempRecipesDir()
    // Idle for a second before it ends: long enough that it is surely still there when the first check returns on a
    // loaded machine (at 100 ms, a CI run read the count after the thread had already gone), short for the test.
    const verdicts = createTypeVerdicts({ idleMs: 1_000 })
    try {
      const typo = folder.write('typo', TYPO)
      expect((await verdicts.check([typo])).get(typo)?.message).toMatch(/status/)
      // The thread is the process's, shared with other runtimes: an earlier test's may have done this check.
      const first = typeCheckThreadId()
      expect(first).toBeDefined()
      // Once idle, the checker's thread has ended (its 'exit' came).
      await vi.waitFor(() => expect(typeCheckThreadId()).toBeUndefined(), { timeout: 10_000, interval: 50 })
      // A recipe edited under a running service: checked by a new thread.
      const fixed = folder.write('fixed', FIXED)
      expect((await verdicts.check([fixed])).has(fixed)).toBe(true)
      expect(typeCheckThreadId()).toBeDefined()
      expect(typeCheckThreadId()).not.toBe(first)
      expect((await verdicts.check([fixed])).get(fixed)).toBeUndefined()
    } finally {
      await verdicts.close()
      folder.cleanup()
    }
    // Two threads each load TypeScript and check: 5–10 s apiece on a slow 2-core host under the rest of the suite.
  }, 60_000)
})
