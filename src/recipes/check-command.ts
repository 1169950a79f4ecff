import { basename, join } from 'node:path'
import { resolveConfig } from '../config/file.ts'
import { CliError, defineCommand, JSON_OPTION } from '../cli-kit.ts'
import { listRecipeFiles } from './loader.ts'

/**
 * `recipes check [name]`: type-checks the recipe files of RECIPES_DIR (wherever it is) against this
 * service's API and prints each error as `file:line:col message`. Exit 1 when there is one.
 */
export const recipesCheck = defineCommand({
  name: 'recipes check',
  summary: 'type-check recipe files in RECIPES_DIR against this service\'s API; prints file:line:col message',
  usage: '[name] [--json]',
  args: [['[name]', 'one recipe to check (default: every recipe in RECIPES_DIR)']],
  options: { json: JSON_OPTION },
  async run(ctx) {
    const [name, ...extra] = ctx.positionals
    if (extra.length) throw new CliError(`unexpected argument "${extra[0]}": check one recipe, or all of them with no name`)
    const config = await resolveConfig({ env: ctx.env })
    const dir = config.recipes.dir
    const all = listRecipeFiles(dir)
    let files = all
    if (name) {
      const wanted = name.endsWith('.ts') ? basename(name, '.ts') : name
      files = all.filter((f) => basename(f, '.ts') === wanted)
      if (files.length === 0) {
        const known = all.map((f) => basename(f, '.ts'))
        throw new CliError(`no recipe named "${wanted}" in ${dir}${known.length ? ` (recipes: ${known.join(', ')})` : ''}`)
      }
    }
    if (files.length === 0) {
      ctx.write(`no recipes in ${dir}\n`)
      return 0
    }
    // The compiler is large: loaded only by the command that needs it.
    const { typeCheckFiles, formatDiagnostic } = await import('./typecheck.ts')
    const diagnostics = typeCheckFiles(files)
    if (ctx.values.json) {
      ctx.json({ dir, files: files.map((f) => join(dir, basename(f))), errors: diagnostics })
    } else {
      for (const d of diagnostics) ctx.write(`${formatDiagnostic(d)}\n`)
      const withErrors = new Set(diagnostics.map((d) => d.file)).size
      ctx.write(
        diagnostics.length
          ? `${diagnostics.length} type error${diagnostics.length === 1 ? '' : 's'} in ${withErrors} file${withErrors === 1 ? '' : 's'}\n`
          : `${files.length} recipe${files.length === 1 ? '' : 's'} checked: no type errors\n`,
      )
    }
    return diagnostics.length ? 1 : 0
  },
})
