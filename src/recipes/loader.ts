import { existsSync, readdirSync, statSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { installationCacheDir } from '../utils/installation-cache.ts'
import type { RecipeDefinition } from './define.ts'
import { recipeProblems } from './validate.ts'
import { fileVersion, type LoadWatch } from './load-watch.ts'
import { recipeFrame } from './recipe-frame.ts'
import { guardExitWhileLoading } from './exit-while-loading.ts'
import { forgetRequiredUnder } from './forget-required.ts'

/** One file of RECIPES_DIR: a usable definition, or the reason it is broken. */
export interface LoadedRecipe {
  name: string
  file: string
  definition: RecipeDefinition | undefined
  /** Why the recipe cannot run (syntax error, throw at import, bad definition): every reason, joined with "; ". */
  error: string | undefined
  /**
   * The loader's reasons one by one, whenever it refused the file (`recipes check` prints a line each); `error` joins
   * them. A type error found later (the service's type check) sets `error` alone.
   */
  reasons?: string[]
  /** The recipe's own time zone, else RECIPES_TIMEZONE. */
  timezone: string
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]*$/

/**
 * How long one file may take to load, its top-level code included. Loading is awaited by start-up, every reload and
 * the event consumer (which loads the recipes before queueing for them): a top-level await that never settles (a
 * fetch to a host that never answers) must break that one recipe, not stall them all.
 */
export const RECIPE_LOAD_TIME_LIMIT_MS = 10_000
/**
 * A file still loading this long holds its thread in a synchronous loop (an await that never settles breaks the recipe
 * at RECIPE_LOAD_TIME_LIMIT_MS; code that never returns keeps any timer from firing): the watchdogs of serve's
 * processing thread and of the CLI stop it then.
 */
export const LOAD_HELD_MS = RECIPE_LOAD_TIME_LIMIT_MS + 5_000

export interface LoadOptions {
  /** Per file; RECIPE_LOAD_TIME_LIMIT_MS unless given (tests use a few milliseconds). */
  timeLimitMs?: number
  /** WEBHOOK_TARGETS: when given, an `on` entry naming a target that is not configured (or is the provider's) breaks the recipe. */
  targets?: Readonly<Record<string, { scheme: string }>>
  /** Told which file is loading: the watchdogs of serve's processing thread and of the CLI name one that never returns (src/recipes/load-watch.ts). */
  watch?: LoadWatch
}

/** A recipe's own vitest file beside it (`no-answer-followup.test.ts`): a test, not a recipe. */
const TEST_FILE = /\.(test|spec)\.ts$/

/** Recipe files: `*.ts` directly in the folder, except declarations, tests and files starting with `_` or `.`. */
export function listRecipeFiles(dir: string): string[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return []
  return readdirSync(dir)
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !TEST_FILE.test(f) && !f.startsWith('_') && !f.startsWith('.'))
    .sort()
    .map((f) => join(dir, f))
}

function firstLine(error: unknown): string {
  // jiti's parse errors put the file:line:column on a second line; keep it, on one line. Their column counts from 0
  // (Babel's), where TypeScript's type errors and editors count from 1: made 1-based, so both point at one place.
  let message = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ').trim()
  if (message.startsWith('ParseError:')) message = message.replace(/(\.[cm]?[jt]sx?):(\d+):(\d+)\b/g, (_all, ext: string, line: string, column: string) => `${ext}:${line}:${Number(column) + 1}`)
  return (message.length > 300 ? `${message.slice(0, 299)}…` : message) || 'unknown error'
}

/**
 * Loads every recipe file with jiti. `switchboard` is served from this very process (the module object
 * the service itself uses), so it resolves wherever RECIPES_DIR is and `instanceof` checks hold; module
 * and file caches are off so an edited file is read afresh on the next load.
 */
export async function loadRecipes(dir: string, fallbackTimezone: string, options: LoadOptions = {}): Promise<LoadedRecipe[]> {
  forgetRequiredUnder(dir)
  const jiti = await createRecipeJiti()
  const out: LoadedRecipe[] = []
  for (const file of listRecipeFiles(dir)) out.push(await loadOne(jiti, file, fallbackTimezone, options))
  return out
}

/** One recipe file, outside any folder listing (`recipes test`, `testRecipe`). */
export async function loadRecipeFile(file: string, fallbackTimezone: string, options: LoadOptions = {}): Promise<LoadedRecipe> {
  forgetRequiredUnder(dirname(file))
  return loadOne(await createRecipeJiti(), file, fallbackTimezone, options)
}

class LoadTimeLimitError extends Error {}

/** Past the load limit by this much when its timer fires, the wait was the file's synchronous code, not a pending await. */
const HELD_MARGIN_MS = 3_000

/**
 * Files whose load ran past its time limit, by the version (size, time) that did: loaded one after another, each such
 * file added its 10 s to every reload — an edit of any other recipe took that long to apply, per hung file. Left out
 * at once until the file changes, as the processing thread leaves out a file that never returned (src/recipes/load-watch.ts).
 */
const hungLoads = new Map<string, { version: string; reason: string }>()

/**
 * The import, or LoadTimeLimitError after `ms`. A real timer: the loader has no clock, and loading is real work
 * (jiti compiles the file). The import itself cannot be cancelled: a hung one stays pending, and its module,
 * should it ever finish, is never used. The timer keeps the process alive, as the load it bounds does.
 */
function withinTimeLimit<T>(work: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new LoadTimeLimitError()), ms)
    work.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error: unknown) => {
        clearTimeout(timer)
        reject(error)
      },
    )
  })
}

function duration(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} s`
}

async function createRecipeJiti() {
  // Imported here rather than at the top: the public API exports `testRecipe`, which loads recipes with
  // this very module, and a static import both ways would make the two modules a cycle.
  const publicApi = await import('../index.ts')
  // jiti too: commands that never load a recipe (and `serve`'s receiver thread) need not load it (src/config/file.ts).
  const { createJiti } = await import('jiti')
  return createJiti(import.meta.url, {
    moduleCache: false,
    // Each file's compiled form is kept by content (jiti names it after the file and checks a hash of its source):
    // a start or hot reload with unchanged files skips the TypeScript compiler jiti loads (babel, ~0.3 s a process).
    // In the installation's own folder, not jiti's default in the system's shared tmp.
    fsCache: installationCacheDir('jiti'),
    // The module as it is: jiti's default interop answers a missing or null `default` with the whole module,
    // and failed on `export default null` with "Cannot read properties of null (reading 'then')".
    interopDefault: false,
    virtualModules: { switchboard: publicApi },
    // Kept as well, so helper files a recipe imports can `import … from 'switchboard'` the same way.
    alias: { switchboard: publicApiPath() },
  })
}

async function loadOne(
  jiti: Awaited<ReturnType<typeof createRecipeJiti>>,
  file: string,
  fallbackTimezone: string,
  options: LoadOptions,
): Promise<LoadedRecipe> {
  const name = basename(file, '.ts')
  const base = { name, file, definition: undefined, error: undefined, timezone: fallbackTimezone }
  // A `_` file is a helper recipes import (the service never loads it as a recipe), named as such: "must use letters,
  // digits, - or _" read as wrong for a name made of them.
  if (name.startsWith('_')) return broken(base, ['a file name starting with "_" is a helper recipes import, not a recipe: the service does not load it (rename it without the "_" to make it one)'])
  if (!NAME.test(name)) return broken(base, ['file name must use letters, digits, "-" or "_" only (and start with a letter or digit)'])
  const leftOut = options.watch?.leftOut(file)
  if (leftOut) return broken(base, [leftOut])
  const limitMs = options.timeLimitMs ?? RECIPE_LOAD_TIME_LIMIT_MS
  const version = fileVersion(file)
  const hung = hungLoads.get(file)
  if (hung && hung.version === version) return broken(base, [hung.reason])
  let exported: unknown
  options.watch?.loading(file)
  const unguard = guardExitWhileLoading(file)
  const started = performance.now()
  try {
    const mod = await withinTimeLimit(jiti.import<Record<string, unknown> | undefined>(file), limitMs)
    exported = mod && 'default' in mod ? mod.default : undefined
  } catch (error) {
    if (error instanceof LoadTimeLimitError) {
      // A limit's timer that fired seconds late was held by the file's own synchronous code — a loop at its top level,
      // which a watchdog then stopped (the CLI's, src/recipes/cli-watchdog.ts) — not by an await: it was named as one.
      const held = performance.now() - started
      const why = held > limitMs + HELD_MARGIN_MS
        ? `its top-level code held the event loop for ${duration(held)} without returning (a synchronous loop?)`
        : `did not finish loading within ${duration(limitMs)}: a top-level await that never settles?`
      const reason = `${why} (left out of later reloads until the file changes)`
      if (version !== undefined) hungLoads.set(file, { version, reason })
      return broken(base, [reason])
    }
    // Where in the file its top-level code threw (a syntax error's message names its place itself).
    const message = firstLine(error)
    const at = /:\d+:\d+/.test(message) ? '' : recipeFrame(error, [dirname(file)], name)
    return broken(base, [`failed to load: ${message}${at}`])
  } finally {
    unguard()
    options.watch?.loaded(file)
  }
  let problems: string[]
  try {
    problems = recipeProblems(exported, fallbackTimezone, options.targets)
  } catch (error) {
    // A getter of the exported object that throws, say: the recipe's own code, and its own reason.
    problems = [error instanceof Error ? error.message : String(error)]
  }
  // Each reason on one line and bounded on its own, so a long one (a key's value pasted whole) does not cut the others.
  if (problems.length) return broken(base, problems.map(firstLine))
  const definition = exported as RecipeDefinition
  return { ...base, definition, timezone: definition.timezone ?? fallbackTimezone }
}

function broken(base: LoadedRecipe, reasons: string[]): LoadedRecipe {
  return { ...base, error: reasons.join('; '), reasons }
}

function publicApiPath(): string {
  return fileURLToPath(new URL('../index.ts', import.meta.url))
}
