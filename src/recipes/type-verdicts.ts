import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { Worker } from 'node:worker_threads'
import type { RecipeDiagnostic } from './diagnostic.ts'
import { recipeSourceFiles } from './source-files.ts'
import { installationCacheDir } from '../utils/installation-cache.ts'

/**
 * The service's view of recipe type errors: the first error of each recipe file, or none. Checking
 * needs TypeScript's compiler (about a second of CPU, more on a busy machine), so it never runs on the
 * start path or the event loop: verdicts are cached by content hash (the recipe, every source file of its folder
 * — helpers and sub-folders — and switchboard's own sources) in `$DATA_DIR/cache/recipe-types.json`, and anything not cached is
 * checked on a worker thread while the service is already up. Runs of a recipe wait for its verdict.
 */
export interface TypeVerdicts {
  /** First error per file (undefined: clean). Cached verdicts answer at once; the rest go to the worker. */
  check(files: string[]): Promise<Map<string, RecipeDiagnostic | undefined>>
  /**
   * Each file's cached verdict, if there is one (null: clean); undefined when the file needs checking. Asked for a
   * whole load at once: a folder's sources are read once for all of its recipes.
   */
  cached(files: string[]): Map<string, RecipeDiagnostic | null | undefined>
  close(): Promise<void>
}

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '..')
/**
 * 4: keys take the folder's sources as one digest (3: a verdict covers the helper files a recipe imports; 2: the recipe
 * file alone; keys cover every source file of the folder since 2, only `_*.ts` beside it in 1).
 */
const CACHE_VERSION = 4
const MAX_ENTRIES = 500
/** How long the type-check thread lives without a check before it is ended (real time: this is about memory). */
const CHECKER_IDLE_MS = 30_000

let fingerprint: string | undefined
/** Changes when switchboard's sources (hence the types recipes are checked against) or TypeScript change. */
function apiFingerprint(): string {
  if (fingerprint) return fingerprint
  const hash = createHash('sha256')
  const require = createRequire(import.meta.url)
  hash.update((require('typescript/package.json') as { version: string }).version)
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith('.ts')) hash.update(path).update(readFileSync(path))
    }
  }
  walk(SRC)
  fingerprint = hash.digest('hex')
  return fingerprint
}

/**
 * A digest of every source file under the recipes folder `dir` (sub-folders too: `lib/`, not only the `_*.ts`
 * helpers beside the recipes), by path and content, in a fixed order (src/recipes/source-files.ts). A recipe may
 * import any of them, so any change there is a change to every recipe's verdict: a recheck costs a second, a stale
 * verdict lets a type error run (or keeps a fixed recipe broken).
 */
function folderDigest(dir: string): string {
  const hash = createHash('sha256')
  for (const path of recipeSourceFiles(dir)) hash.update(path).update('\0').update(readFileSync(path))
  return hash.digest('hex')
}

/**
 * The recipe, every source file of its folder (helpers, `lib/`) and the API: what its verdict depends on. `folders`
 * keeps each folder's digest for the keys of one call: a folder of many recipes is read once, not once per recipe.
 */
function keyOf(file: string, folders: Map<string, string> = new Map()): string | undefined {
  try {
    const dir = dirname(file)
    let folder = folders.get(dir)
    if (folder === undefined) folders.set(dir, (folder = folderDigest(dir)))
    return createHash('sha256').update(apiFingerprint()).update(file).update('\0').update(readFileSync(file)).update(folder).digest('hex')
  } catch {
    return undefined
  }
}

// Plain CommonJS evaluated in the worker: it registers tsx there, then loads the checker module. It runs at
// normal priority: runs of a recipe wait for its verdict, and at nice 19 on a busy machine they waited long.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const ready = (async () => {
  const { register } = await import(workerData.tsx)
  register()
  return import(workerData.checker)
})()
parentPort.on('message', async ({ id, files }) => {
  try {
    const checker = await ready
    parentPort.postMessage({ id, verdicts: checker.typeCheckRecipes(files) })
  } catch (error) {
    parentPort.postMessage({ id, error: String((error && error.message) || error) })
  }
})
`

/** tsx's ESM `register` (its CommonJS build cannot register ESM hooks from an eval'd worker). */
function tsxEsmApi(): string {
  const require = createRequire(import.meta.url)
  const pkg = require.resolve('tsx/package.json')
  const exported = (require(pkg) as { exports: Record<string, { import: { default: string } }> }).exports['./esm/api']!
  return join(dirname(pkg), exported.import.default)
}

interface Reply {
  id: number
  /** Each file's first type error (its own, or a helper's it imports), by resolved path; null: clean. */
  verdicts?: Record<string, RecipeDiagnostic | null>
  error?: string
}

/**
 * The checker holds TypeScript's compiler and the recipes' program: hundreds of MB. It is ended once idle and started
 * again for the next check (a recipe edited under a running service): a service whose recipes do not change should not
 * carry it. One per process (per thread), shared by every TypeVerdicts in it: the compiler keeps its last program, so a
 * check while it lives — another folder's, another runtime's — reuses the parsed declarations (~1.2 s against ~2.6 s).
 */
const checker = {
  worker: undefined as Worker | undefined,
  /** The ended worker's 'exit' has not come yet while this is set. */
  live: undefined as Worker | undefined,
  idleTimer: undefined as ReturnType<typeof setTimeout> | undefined,
  /** Commands watching a folder (keepTypeCheckerWarm): while any does, an idle checker is not ended. */
  kept: 0,
  seq: 0,
  waiting: new Map<number, { owner: object; resolve(v: Record<string, RecipeDiagnostic | null>): void; reject(e: Error): void }>(),
}

function failAll(error: Error, owner?: object): void {
  for (const [id, w] of checker.waiting) {
    if (owner !== undefined && w.owner !== owner) continue
    checker.waiting.delete(id)
    w.reject(error)
  }
}

function ensureChecker(): Worker {
  if (checker.idleTimer) clearTimeout(checker.idleTimer)
  checker.idleTimer = undefined
  if (checker.worker) return checker.worker
  const w = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { tsx: pathToFileURL(tsxEsmApi()).href, checker: new URL('./typecheck.ts', import.meta.url).href },
  })
  // Never keeps the process alive on its own (a CLI command exits when its work is done).
  w.unref()
  w.on('message', (reply: Reply) => {
    const entry = checker.waiting.get(reply.id)
    checker.waiting.delete(reply.id)
    if (!entry) return
    if (reply.verdicts) entry.resolve(reply.verdicts)
    else entry.reject(new Error(reply.error ?? 'type check failed'))
  })
  w.on('error', (error) => {
    if (checker.worker === w) checker.worker = undefined
    failAll(error)
  })
  w.on('exit', (code) => {
    if (checker.live === w) checker.live = undefined
    if (checker.worker !== w) return
    checker.worker = undefined
    failAll(new Error(`the type-check thread exited (${code})`))
  })
  checker.worker = w
  checker.live = w
  return w
}

/**
 * Keeps the checker (and the program it holds) while a command watches recipes for changes (`recipes test --watch`):
 * ended after CHECKER_IDLE_MS, the next save after a pause was a whole check again (seconds) where a kept program
 * answers in a fraction of one. The returned function lets it go (ended after the usual idle time).
 */
export function keepTypeCheckerWarm(): () => void {
  checker.kept++
  let released = false
  return () => {
    if (released) return
    released = true
    checker.kept--
    endWhenIdle(CHECKER_IDLE_MS)
  }
}

/**
 * Starts the checker on `files` now, when no check is due: a command watching a recipe whose first verdict came from
 * the cache has no program yet, and the first save then waited for a whole check (~2 s, more on a slow machine) where
 * a later one takes a fraction of a second. Its verdicts are not needed (a save checks again); a failure is the next
 * check's to report.
 */
export function warmTypeChecker(files: string[]): void {
  if (checker.worker) return
  checkInThread({}, files, CHECKER_IDLE_MS).catch(() => undefined)
}

/** The thread id of the type-check thread while it runs (until its exit), if there is one. */
export function typeCheckThreadId(): number | undefined {
  return checker.live?.threadId
}

function checkInThread(owner: object, files: string[], idleMs: number): Promise<Record<string, RecipeDiagnostic | null>> {
  return new Promise<Record<string, RecipeDiagnostic | null>>((resolveCheck, reject) => {
    const id = ++checker.seq
    checker.waiting.set(id, { owner, resolve: resolveCheck, reject })
    const w = ensureChecker()
    // Referenced while a check is pending, so an awaiting CLI command is not cut short.
    w.ref()
    w.postMessage({ id, files })
  }).finally(() => endWhenIdle(idleMs))
}

/** Ends the checker once it has been idle for `idleMs`, unless a check is pending or a watching command keeps it. */
function endWhenIdle(idleMs: number): void {
  const idle = checker.worker
  if (checker.waiting.size > 0 || !idle) return
  idle.unref()
  if (checker.kept > 0) return
  if (checker.idleTimer) clearTimeout(checker.idleTimer)
  checker.idleTimer = setTimeout(() => {
    checker.idleTimer = undefined
    if (checker.worker !== idle || checker.waiting.size > 0 || checker.kept > 0) return
    checker.worker = undefined
    void idle.terminate()
  }, idleMs)
  checker.idleTimer.unref()
}

/**
 * Verdicts this process has seen, by the same key as the cache file's, shared by every TypeVerdicts in it: the key
 * covers everything a verdict depends on, so a runtime with another data folder (a test's, a second runtime in one
 * process) takes the verdict another one checked instead of checking the same files again (~1–3 s each).
 */
const known = new Map<string, RecipeDiagnostic | null>()

function remember(key: string, verdict: RecipeDiagnostic | null): void {
  known.delete(key)
  known.set(key, verdict)
  if (known.size > MAX_ENTRIES) known.delete(known.keys().next().value!)
}

type VerdictEntries = Record<string, RecipeDiagnostic | null>

/** A verdict file's entries; none if it is missing, damaged or of another version (a damaged cache is only a slower check). */
function readVerdicts(file: string): VerdictEntries {
  try {
    if (!existsSync(file)) return {}
    const saved = JSON.parse(readFileSync(file, 'utf8')) as { version?: number; entries?: VerdictEntries }
    return saved.version === CACHE_VERSION && saved.entries ? saved.entries : {}
  } catch {
    return {}
  }
}

/**
 * Writes a verdict file whole, the newest MAX_ENTRIES kept. Written beside it and renamed over it: processes sharing
 * the file (a receiver and a worker on one data folder, CLI commands) never read half of another's write.
 */
function writeVerdicts(file: string, entries: VerdictEntries): void {
  const keys = Object.keys(entries)
  for (const k of keys.slice(0, Math.max(0, keys.length - MAX_ENTRIES))) delete entries[k]
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  try {
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(temporary, JSON.stringify({ version: CACHE_VERSION, entries }))
    renameSync(temporary, file)
  } catch {
    // A read-only folder: verdicts stay in memory.
    rmSync(temporary, { force: true })
  }
}

/**
 * The installation's copy of the verdicts, beside the bundle (src/bundle.mjs): every process of this checkout — CLI
 * commands, replicas, services with other data folders — answers from it what one of them checked. Inside
 * node_modules, so `npm ci` starts it afresh.
 */
export function installationTypeCacheFile(): string {
  return installationCacheDir('recipe-types.json')
}

export function createTypeVerdicts(
  options: {
    /** The data folder's verdicts (`typeCacheFile`). */
    cacheFile?: string
    /** Verdicts shared by every process of the installation (`installationTypeCacheFile`), asked after `cacheFile`. */
    sharedFile?: string
    /** Default CHECKER_IDLE_MS. */
    idleMs?: number
  } = {},
): TypeVerdicts {
  const entries: VerdictEntries = options.cacheFile ? readVerdicts(options.cacheFile) : {}
  const shared: VerdictEntries = options.sharedFile ? readVerdicts(options.sharedFile) : {}
  const save = (checked: VerdictEntries) => {
    if (options.cacheFile) writeVerdicts(options.cacheFile, entries)
    // Read again just before writing: other processes add theirs meanwhile (two writing at once: one's additions
    // are lost, and checked again when next needed).
    if (options.sharedFile && Object.keys(checked).length > 0) writeVerdicts(options.sharedFile, { ...readVerdicts(options.sharedFile), ...checked })
  }
  /** A verdict known without checking: this data folder's, this process's, or the installation's. */
  const lookUp = (key: string): RecipeDiagnostic | null | undefined => {
    if (key in entries) return entries[key]
    if (known.has(key)) return known.get(key) ?? null
    return key in shared ? shared[key] : undefined
  }
  /**
   * The verdicts of `files` known without checking (by file; undefined: needs checking). One found elsewhere is kept in
   * this data folder's file too, which is then written once: a reinstall (a fresh node_modules) still finds it there.
   */
  const recall = (files: string[]): Map<string, { key: string | undefined; verdict: RecipeDiagnostic | null | undefined }> => {
    const folders = new Map<string, string>()
    let learned = false
    const found = new Map(files.map((file) => {
      const key = keyOf(file, folders)
      const verdict = key === undefined ? undefined : lookUp(key)
      if (key !== undefined && verdict !== undefined && !(key in entries)) {
        entries[key] = verdict
        learned = true
      }
      return [file, { key, verdict }] as const
    }))
    if (learned) save({})
    return found
  }

  /** This instance's checks, told apart from other runtimes' in the shared thread (close rejects only its own). */
  const owner = {}
  let closed = false
  // One check in flight at a time: requests made meanwhile are merged into the next one.
  let running: Promise<void> = Promise.resolve()

  return {
    cached(files) {
      return new Map([...recall(files)].map(([file, { verdict }]) => [file, verdict]))
    },
    async check(files) {
      const verdicts = new Map<string, RecipeDiagnostic | undefined>()
      const todo: Array<{ file: string; key: string }> = []
      for (const [file, { key, verdict }] of recall(files)) {
        if (key === undefined) continue
        if (verdict === undefined) todo.push({ file, key })
        else verdicts.set(file, verdict ?? undefined)
      }
      if (todo.length === 0) return verdicts
      const job = running.then(() => {
        if (closed) throw new Error('closed')
        return checkInThread(owner, todo.map((t) => t.file), options.idleMs ?? CHECKER_IDLE_MS)
      })
      running = job.then(() => undefined, () => undefined)
      const checked = await job
      const fresh: VerdictEntries = {}
      for (const { file, key } of todo) {
        const first = checked[resolve(file)] ?? null
        entries[key] = first
        fresh[key] = first
        remember(key, first)
        verdicts.set(file, first ?? undefined)
      }
      save(fresh)
      return verdicts
    },
    async close() {
      closed = true
      // The thread is shared: it goes on for others' checks and ends once idle (an unreferenced thread holds no process open).
      failAll(new Error('closed'), owner)
    },
  }
}

/** Where the service keeps verdicts. */
export function typeCacheFile(dataDir: string): string {
  return join(dataDir, 'cache', `recipe-types.json`)
}

