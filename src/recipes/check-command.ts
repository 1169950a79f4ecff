import { dirname, resolve } from 'node:path'
import { resolveConfig } from '../config/file.ts'
import { defineCommand, JSON_OPTION } from '../cli-kit.ts'
import { namedRecipeFile } from './named-recipe-file.ts'
import { listRecipeFiles, loadRecipeFile, loadRecipes, type LoadOptions } from './loader.ts'
import { cliLoadWatch } from './cli-watchdog.ts'
import type { RecipeDiagnostic } from './diagnostic.ts'
import { watchedFingerprint } from './watch-folder.ts'
import { rerunOnChange } from './rerun-on-change.ts'
import { shownPath } from '../utils/shown-path.ts'

/** A file the service would list as broken before any type check: it does not load, or its definition is refused. */
interface LoadProblem {
  recipe: string
  file: string
  /** Every reason, joined with "; ": the service's own "broken" reason for the file (its log line, /admin/recipes). */
  reason: string
  /** The same reasons one by one: a definition may be refused for several at once (a bad schedule and an unknown key). */
  reasons: string[]
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

/** What one check found, and the exit code it gives. */
interface CheckResult {
  code: number
  /** The result as `--json` prints it. */
  json: { dir: string; files: string[]; errors: RecipeDiagnostic[]; broken: LoadProblem[] }
  /** The result as text: a line per finding, then the verdict. */
  text: string
}

/** Loads, validates and type-checks `name` (a recipe of `dir` or a path), or every recipe of `dir`. */
async function checkRecipes(dir: string, name: string | undefined, timezone: string, targets: LoadOptions['targets']): Promise<CheckResult> {
  const files = name ? [namedRecipeFile(name, dir)] : listRecipeFiles(dir)
  if (files.length === 0) return { code: 0, json: { dir, files: [], errors: [], broken: [] }, text: `no recipes in ${dir}\n` }
  // The loader first: it is the cheap half, and the service refuses a file it rejects whatever its types.
  const options = { targets, watch: cliLoadWatch() }
  const loaded = name ? [await loadRecipeFile(files[0]!, timezone, options)] : await loadRecipes(dir, timezone, options)
  const broken: LoadProblem[] = loaded.flatMap((r) => (r.error === undefined ? [] : [{ recipe: r.name, file: r.file, reason: r.error, reasons: r.reasons ?? [r.error] }]))
  // The compiler is large: loaded only by the command that needs it.
  const { typeCheckFiles, formatDiagnostic } = await import('./typecheck.ts')
  const diagnostics = typeCheckFiles(files)
  const lines = [...diagnostics.map((d) => formatDiagnostic(d)), ...broken.flatMap((b) => b.reasons.map((reason) => `${shownPath(b.file)}: broken: ${reason}`))]
  const withErrors = new Set(diagnostics.map((d) => d.file)).size
  const found = [
    ...(diagnostics.length ? [`${plural(diagnostics.length, 'type error')} in ${plural(withErrors, 'file')}`] : []),
    ...(broken.length ? [`${plural(broken.length, 'recipe')} the service would not load`] : []),
  ]
  lines.push(found.length ? found.join('; ') : `${plural(files.length, 'recipe')} checked: no type errors`)
  return {
    code: diagnostics.length || broken.length ? 1 : 0,
    json: { dir, files: files.map((f) => resolve(f)), errors: diagnostics, broken },
    text: lines.map((l) => `${l}\n`).join(''),
  }
}

/**
 * `recipes check [name]`: what the service would say of each recipe file of RECIPES_DIR (wherever it is)
 * before running it. It loads and validates each file as the service's loader does (a bad schedule, time zone or
 * event type, an unknown key, no default export, a file name it refuses: `file: broken: reason`, a line for each of
 * a file's reasons, so a file refused for three is fixed in one round, not three) and type-checks
 * them against this service's API (`file:line:col message`). Exit 1 when either finds something: a check that
 * passed a file the service then refuses would be worse than none.
 *
 * `--watch` checks again whenever a file of the folder changes, until Ctrl-C (exit 0): the compiler keeps the parse
 * of every file that has not changed (src/recipes/typecheck.ts), so after the first check's few seconds a save is
 * answered in a fraction of a second — where a new `recipes check` parses switchboard's types and @types/node again.
 */
export const recipesCheck = defineCommand({
  name: 'recipes check',
  runsRecipeCode: true,
  summary: 'check recipe files in RECIPES_DIR as the service would: load and validate each, and type-check it against this service\'s API',
  usage: '[name] [--watch] [--json]',
  args: [['[name]', 'one recipe to check: its name in RECIPES_DIR (with or without .ts), or a path to a recipe file (default: every recipe in RECIPES_DIR)']],
  options: {
    watch: {
      type: 'boolean',
      help: 'keep checking: check again each time a file of RECIPES_DIR (or a sub-folder such as lib/) changes — in a fraction of a second after the first check — until Ctrl-C; with --json, one JSON object a line per check',
    },
    json: JSON_OPTION,
  },
  examples: ['recipes check', 'recipes check missed-calls --watch'],
  async run(ctx) {
    const [name] = ctx.positionals
    const config = await resolveConfig({ env: ctx.env })
    const dir = config.recipes.dir
    const json = Boolean(ctx.values.json)
    const check = () => checkRecipes(dir, name, config.recipes.timezone, config.webhook.targets)
    if (!ctx.values.watch) {
      const result = await check()
      if (json) ctx.json(result.json)
      else ctx.write(result.text)
      return result.code
    }
    // In watch mode `--json` prints each check on a line of its own (a stream a tool reads line by line), and the
    // lines about watching go to stderr, out of that stream.
    const report = (result: CheckResult) => (json ? ctx.write(`${JSON.stringify(result.json)}\n`) : ctx.write(result.text))
    // The folder of the recipe named (a path may be outside RECIPES_DIR), else RECIPES_DIR.
    const watched = name ? dirname(resolve(namedRecipeFile(name, dir))) : dir
    const since = watchedFingerprint(watched)
    // A mistake in the command itself (a name that is no recipe) ends it, as without --watch.
    report(await check())
    return rerunOnChange({ dir: watched, since, again: 'checking again', say: (text) => (json ? ctx.writeErr(text) : ctx.write(text)), rerun: async () => report(await check()), readerGone: ctx.readerGone })
  },
})
