import { execFile } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { afterEach, describe, expect, it } from 'vitest'
import { bundledEntries as bundle, fingerprint } from '../../src/bundle.mjs'
import { ROOT } from './processes.ts'

const run = promisify(execFile)

const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

/** A small source tree with the two entry points; the CLI entry reads a file next to a nested module. */
function sources(): { src: string; cache: string } {
  const root = mkdtempSync(join(tmpdir(), 'sb-bundle-'))
  dirs.push(root)
  const src = join(root, 'src')
  mkdirSync(join(src, 'nested'), { recursive: true })
  writeFileSync(join(src, 'nested', 'where.ts'), `import { readFileSync } from 'node:fs'\nexport const where: string = import.meta.url\nexport const dir: string = import.meta.dirname\nexport const note = (): string => readFileSync(new URL('./note.txt', import.meta.url), 'utf8')\n`)
  writeFileSync(join(src, 'nested', 'note.txt'), 'found next to its module')
  writeFileSync(join(src, 'cli.ts'), `import { where, dir, note } from './nested/where.ts'\nexport const main = async (): Promise<unknown> => ({ where, dir, note: note(), lazy: (await import('./lazy.ts')).lazy })\n`)
  writeFileSync(join(src, 'lazy.ts'), `export const lazy = 'loaded when asked'\n`)
  writeFileSync(join(src, 'processing-thread.ts'), `export const thread = true\n`)
  return { src, cache: join(root, 'cache') }
}

describe('the executable runs a bundle of the sources (src/bundle.mjs)', () => {
  it('builds once; each module keeps its own import.meta.url, so files next to it are found; dynamic imports load lazily', async () => {
    const { src, cache } = sources()
    const entries = await bundle({ srcDir: src, cacheDir: cache })
    expect(entries).toBeDefined()
    const cli = (await import(entries!.cli)) as { main(): Promise<Record<string, string>> }
    expect(await cli.main()).toEqual({
      where: pathToFileURL(join(src, 'nested', 'where.ts')).href,
      dir: join(src, 'nested'),
      note: 'found next to its module',
      lazy: 'loaded when asked',
    })
    expect(existsSync(new URL(entries!['processing-thread']))).toBe(true)
    const built = readdirSync(cache)
    expect(built).toHaveLength(1)
    const builtAt = statSync(join(cache, built[0]!)).mtimeMs

    // Unchanged sources: the same bundle, not built again.
    expect(await bundle({ srcDir: src, cacheDir: cache })).toEqual(entries)
    expect(readdirSync(cache)).toEqual(built)
    expect(statSync(join(cache, built[0]!)).mtimeMs).toBe(builtAt)
  })

  it('an edited source is a new fingerprint and a new bundle; bundles a week old are removed', async () => {
    const { src, cache } = sources()
    const first = await bundle({ srcDir: src, cacheDir: cache })
    const before = fingerprint(src, 'v')
    writeFileSync(join(src, 'lazy.ts'), `export const lazy = 'edited'\n`)
    expect(fingerprint(src, 'v')).not.toBe(before)
    // The same files, times and all, elsewhere (another checkout sharing node_modules) are another bundle: a
    // bundle points back at its own sources.
    const copy = join(src, '..', 'copy')
    cpSync(src, copy, { recursive: true, preserveTimestamps: true })
    expect(fingerprint(copy, 'v')).not.toBe(fingerprint(src, 'v'))
    const old = readdirSync(cache)[0]!
    const weekAgo = new Date(Date.now() - 8 * 24 * 3600_000)
    utimesSync(join(cache, old), weekAgo, weekAgo)
    // What else the installation keeps there (compiled recipes, type verdicts) is not a bundle, however old.
    mkdirSync(join(cache, 'jiti'))
    writeFileSync(join(cache, 'recipe-types.json'), '{}')
    for (const other of ['jiti', 'recipe-types.json']) utimesSync(join(cache, other), weekAgo, weekAgo)
    const second = await bundle({ srcDir: src, cacheDir: cache })
    expect(second!.cli).not.toBe(first!.cli)
    expect(await ((await import(second!.cli)) as { main(): Promise<{ lazy: string }> }).main()).toMatchObject({ lazy: 'edited' })
    expect(readdirSync(cache).sort()).toEqual([second!.cli.split('/').at(-2), 'jiti', 'recipe-types.json'].sort())
  })

  it('builds started at once (CLI commands, test workers, or calls in one process) all get the one complete bundle', async () => {
    const { src, cache } = sources()
    const all = await Promise.all(Array.from({ length: 4 }, () => bundle({ srcDir: src, cacheDir: cache })))
    expect(all[0]).toBeDefined()
    for (const entries of all) expect(entries).toEqual(all[0])
    expect(readdirSync(cache)).toEqual([all[0]!.cli.split('/').at(-2)])
  })

  it('takes the many-module packages inside (a CommonJS one too) and leaves native, loader and shared ones outside', async () => {
    // Inside the checkout, so packages resolve from its node_modules as the service's own sources do.
    const root = mkdtempSync(join(ROOT, 'node_modules', '.cache', 'sb-bundle-test-'))
    dirs.push(root)
    const src = join(root, 'src')
    mkdirSync(src, { recursive: true })
    writeFileSync(
      join(src, 'cli.ts'),
      [
        `import { sql } from 'kysely'`,
        `import { Registry } from 'prom-client'`,
        `import { z } from 'zod'`,
        `import Database from 'better-sqlite3'`,
        `export const main = async (): Promise<unknown> => ({ sql: typeof sql, registry: typeof new Registry().metrics, zod: z.string().parse('ok'), sqlite: new Database(':memory:').prepare('select 41 + 1 as n').get() })`,
      ].join('\n'),
    )
    writeFileSync(join(src, 'processing-thread.ts'), `export const thread = true\n`)
    const entries = await bundle({ srcDir: src, cacheDir: join(root, 'cache') })
    expect(entries).toBeDefined()
    expect(await ((await import(entries!.cli)) as { main(): Promise<unknown> }).main()).toEqual({ sql: 'function', registry: 'function', zod: 'ok', sqlite: { n: 42 } })
    const dir = join(root, 'cache', entries!.cli.split('/').at(-2)!)
    const imported = new Set<string>()
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.js'))) {
      for (const m of readFileSync(join(dir, file), 'utf8').matchAll(/^import [^;]*? from "([^"]+)"/gm)) imported.add(m[1]!)
    }
    expect([...imported].filter((m) => !m.startsWith('node:') && !m.startsWith('./')).sort()).toEqual(['better-sqlite3', 'zod'])
  })

  it('where no bundle can be written the answer is "none", so the sources run through tsx', async () => {
    const { src } = sources()
    // A cache folder that cannot be made (it would sit under a file): refused for every user, root too.
    expect(await bundle({ srcDir: src, cacheDir: join(src, 'cli.ts', 'cache') })).toBeUndefined()
  })

  it('the CLI answers the same from the bundle and, with SWITCHBOARD_BUNDLE=0, from the sources through tsx', async () => {
    const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' }
    const bundled = await run(process.execPath, [join(ROOT, 'src/bin.mjs'), 'recipes', '--help'], { env })
    const sourced = await run(process.execPath, [join(ROOT, 'src/bin.mjs'), 'recipes', '--help'], { env: { ...env, SWITCHBOARD_BUNDLE: '0' } })
    expect(bundled.stdout).toMatch(/^usage: switchboard recipes <command>/)
    expect(sourced.stdout).toBe(bundled.stdout)
  })
})

describe('the start path', () => {
  it('a command on SQLite (the default) loads no Postgres driver and no TypeScript compiler', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-start-path-'))
    dirs.push(dir)
    // Preloaded into the real bin: at exit it names every package module the process loaded that a SQLite start
    // has no use for (pg was imported by the store's module, ~50 ms of every start).
    const probe = join(dir, 'probe.mjs')
    writeFileSync(
      probe,
      [
        `import { createRequire } from 'node:module'`,
        `import { writeSync } from 'node:fs'`,
        `const cache = createRequire(import.meta.url).cache`,
        `process.on('exit', () => writeSync(2, '\\nloaded: ' + JSON.stringify(Object.keys(cache).filter((k) => /\\/node_modules\\/(pg|pg-[a-z-]+|typescript)\\//.test(k)).length) + '\\n'))`,
      ].join('\n'),
    )
    const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATA_DIR: join(dir, 'data'), SWITCHBOARD_CONFIG: 'none' }
    const { stdout, stderr } = await run(process.execPath, ['--import', pathToFileURL(probe).href, join(ROOT, 'src/bin.mjs'), 'migrate'], { env })
    expect(stdout).toMatch(/^applied 0001_initial/)
    expect(stderr).toMatch(/\nloaded: 0\n/)
  })
})
