import { spawn } from 'node:child_process'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

const ROOT = resolve(import.meta.dirname, '../..')
const BUNDLE = pathToFileURL(join(ROOT, 'src/bundle.mjs')).href

export interface WatchdogLimits {
  /** How long a recipe file's top-level code may hold the command (the product's default: RECIPE_LOAD_TIME_LIMIT_MS + 5 s). */
  loadingMs: number
  /** How long a run's code may hold it. */
  runningMs: number
}

/**
 * The CLI as its executable runs it — the same bundle, which src/bin.mjs starts asking for the watchdog — with the
 * watchdog's limits short enough for a test, or (`'configured'`) the product's, from RECIPE_TIMEOUT_SECONDS. (Through tsx instead, each command spent ~1.2 s more loading the sources.)
 * A command the watchdog failed to end is killed after 30 s, and the test says so.
 *
 * Keep `loadingMs` at 3 s or more: a process's first recipe load brings in jiti's TypeScript transform, which held the
 * event loop past the 1.5 s these tests once gave it on a busy two-core machine (a cold checkout, three test workers),
 * and the watchdog then stopped a recipe that loads fine.
 */
export function cliWithWatchdog(args: string[], env: Record<string, string>, limits: WatchdogLimits | 'configured'): Promise<{ code: number | null; out: string; err: string; ms: number }> {
  const script = `import { bundledEntries } from ${JSON.stringify(BUNDLE)}
const bundle = await bundledEntries()
if (!bundle) throw new Error('no bundle of the sources could be built')
process.setSourceMapsEnabled(true)
process.env.SWITCHBOARD_PROCESSING_ENTRY = bundle['processing-thread']
const { main } = await import(bundle.cli)
process.exitCode = await main(process.argv.slice(1), { watchRecipeCode: ${limits === 'configured' ? 'true' : JSON.stringify(limits)} })`
  const started = Date.now()
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', SWITCHBOARD_CONFIG: 'none', LOG_LEVEL: 'silent', RECIPES_TYPECHECK: 'false', ...env },
  })
  let out = ''
  let err = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (err += d.toString()))
  const kill = setTimeout(() => child.kill('SIGKILL'), 30_000)
  return new Promise((done) => child.on('close', (code) => (clearTimeout(kill), done({ code, out, err, ms: Date.now() - started }))))
}
