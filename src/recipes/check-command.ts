import { basename, isAbsolute, join, relative } from 'node:path'
import { resolveConfig } from '../config/file.ts'
import { CliError, defineCommand, JSON_OPTION } from '../cli-kit.ts'
import { ArgumentError } from '../utils/argument-error.ts'
import { findRecipeFile } from './find-recipe-file.ts'
import { listRecipeFiles, loadRecipeFile, loadRecipes } from './loader.ts'
import { cliLoadWatch } from './cli-watchdog.ts'

/** A file the service would list as broken before any type check: it does not load, or its definition is refused. */
interface LoadProblem {
  recipe: string
  file: string
  reason: string
}

/** Like `formatDiagnostic`: relative to the working directory when the file is inside it. */
function shownPath(file: string, cwd = process.cwd()): string {
  const rel = relative(cwd, file)
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : file
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

/**
 * `recipes check [name]`: what the service would say of each recipe file of RECIPES_DIR (wherever it is)
 * before running it. It loads and validates each file as the service's loader does (a bad schedule, time zone or
 * event type, an unknown key, no default export, a file name it refuses: `file: broken: reason`) and type-checks
 * them against this service's API (`file:line:col message`). Exit 1 when either finds something: a check that
 * passed a file the service then refuses would be worse than none.
 */
export const recipesCheck = defineCommand({
  name: 'recipes check',
  runsRecipeCode: true,
  summary: 'check recipe files in RECIPES_DIR as the service would: load and validate each, and type-check it against this service\'s API',
  usage: '[name] [--json]',
  args: [['[name]', 'one recipe to check: its name in RECIPES_DIR (with or without .ts), or a path to a recipe file (default: every recipe in RECIPES_DIR)']],
  options: { json: JSON_OPTION },
  async run(ctx) {
    const [name] = ctx.positionals
    const config = await resolveConfig({ env: ctx.env })
    const dir = config.recipes.dir
    const all = listRecipeFiles(dir)
    let files = all
    if (name) {
      try {
        files = [findRecipeFile(name, dir)]
      } catch (error) {
        if (error instanceof ArgumentError) throw new CliError(error.message)
        throw error
      }
    }
    if (files.length === 0) {
      ctx.write(`no recipes in ${dir}\n`)
      return 0
    }
    // The loader first: it is the cheap half, and the service refuses a file it rejects whatever its types.
    const options = { targets: config.webhook.targets, watch: cliLoadWatch() }
    const loaded = name ? [await loadRecipeFile(files[0]!, config.recipes.timezone, options)] : await loadRecipes(dir, config.recipes.timezone, options)
    const broken: LoadProblem[] = loaded.flatMap((r) => (r.error === undefined ? [] : [{ recipe: r.name, file: r.file, reason: r.error }]))
    // The compiler is large: loaded only by the command that needs it.
    const { typeCheckFiles, formatDiagnostic } = await import('./typecheck.ts')
    const diagnostics = typeCheckFiles(files)
    if (ctx.values.json) {
      ctx.json({ dir, files: files.map((f) => join(dir, basename(f))), errors: diagnostics, broken })
    } else {
      for (const d of diagnostics) ctx.write(`${formatDiagnostic(d)}\n`)
      for (const b of broken) ctx.write(`${shownPath(b.file)}: broken: ${b.reason}\n`)
      const withErrors = new Set(diagnostics.map((d) => d.file)).size
      const found = [
        ...(diagnostics.length ? [`${plural(diagnostics.length, 'type error')} in ${plural(withErrors, 'file')}`] : []),
        ...(broken.length ? [`${plural(broken.length, 'recipe')} the service would not load`] : []),
      ]
      ctx.write(found.length ? `${found.join('; ')}\n` : `${plural(files.length, 'recipe')} checked: no type errors\n`)
    }
    return diagnostics.length || broken.length ? 1 : 0
  },
})
