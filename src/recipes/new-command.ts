import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { basename, join, resolve } from 'node:path'
import { resolveConfig } from '../config/file.ts'
import { CliError, defineCommand } from '../cli-kit.ts'
import { cliName } from '../utils/cli-name.ts'
import { cliLoadWatch } from './cli-watchdog.ts'
import { loadRecipes } from './loader.ts'
import { ensureEditorTsconfig } from './editor-tsconfig.ts'
import { samplePath } from './sample-path.ts'
import { shownPath } from '../utils/shown-path.ts'

/** The starting points `recipes new --from` offers: each a commented recipe in ./templates that type-checks as is. */
export const RECIPE_TEMPLATES = ['followup', 'batch', 'report', 'webhook-forward'] as const
export type RecipeTemplate = (typeof RECIPE_TEMPLATES)[number]

const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]*$/

export function recipeTemplate(template: RecipeTemplate, name: string): string {
  return readFileSync(new URL(`./templates/${template}.ts`, import.meta.url), 'utf8').replaceAll('__NAME__', name)
}

/**
 * Lines saying which other recipes run on the same events as the new one: the follow-up template is the shipped
 * `no-answer-followup` with another name, and a copy next to the original runs beside it, not instead of it.
 */
async function sharedTriggers(dir: string, name: string, timezone: string): Promise<string[]> {
  // Their top-level code runs as they load: one that never returns is named by the command's watchdog.
  const loaded = await loadRecipes(dir, timezone, { watch: cliLoadWatch() })
  const mine = new Set<string>(loaded.find((r) => r.name === name)?.definition?.on ?? [])
  const lines: string[] = []
  for (const other of loaded) {
    const shared = (other.definition?.on ?? []).filter((on) => other.name !== name && mine.has(on))
    if (shared.length === 0) continue
    lines.push(`note: ${other.name} also runs on ${shared.join(', ')}: both will run on each of them.`)
    lines.push(`  to have ${name} replace it, move ${basename(other.file)} out of the recipes folder (or rename it to _${basename(other.file)}: files starting with "_" are not loaded)`)
  }
  return lines
}

/** A word a shell reads back as it is: quoted when it has anything but the characters of a plain path. */
function shellWord(word: string): string {
  return /^[\w./:@%+=,-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`
}

/**
 * `RECIPES_DIR=<dir> ` when the recipe went to a folder only this command's environment names: the next commands, and
 * the service, find it only with the same setting (without it they read ./recipes, or the config file's folder).
 */
function recipesDirPrefix(env: Record<string, string | undefined>, dir: string): string {
  if (!env.RECIPES_DIR || dir === resolve(process.cwd(), 'recipes')) return ''
  return `RECIPES_DIR=${shellWord(shownPath(dir))} `
}

/** What `recipes test` takes to show each template at work: the sample its trigger needs. */
const TEST_INPUT: Record<RecipeTemplate, () => string> = {
  followup: () => ` --events ${samplePath('no-answer-events.json')}   # a dry run on sample no_answer/busy events`,
  batch: () => ` --csv ${samplePath('leads.csv')} --now 2026-01-15T04:00:00Z   # a sample CSV, at a morning hour`,
  report: () => '   # the report of an empty day (a dry run: nothing is mailed)',
  'webhook-forward': () => ` --events ${samplePath('completed-events.json')}   # logs what it would forward`,
}

/** `recipes new <name> [--from followup|batch|report|webhook-forward]`: writes RECIPES_DIR/<name>.ts. */
export const recipesNew = defineCommand({
  name: 'recipes new',
  summary: `write a commented recipe to start from (--from ${RECIPE_TEMPLATES.join('|')}; default followup)`,
  usage: `<name> [--from ${RECIPE_TEMPLATES.join('|')}]`,
  args: [['<name>', 'the new recipe\'s name: letters, digits, - or _ (it becomes RECIPES_DIR/<name>.ts)']],
  options: {
    from: { type: 'string', value: 'TEMPLATE', help: `what to start from: ${RECIPE_TEMPLATES.join(', ')} (default followup)` },
  },
  examples: ['recipes new busy-retry --from followup'],
  // It loads the folder's recipes (to say which others run on the same events): their top-level code runs.
  runsRecipeCode: true,
  async run(ctx) {
    const [name] = ctx.positionals
    if (!name) throw new CliError(`which name? usage: recipes new <name> [--from ${RECIPE_TEMPLATES.join('|')}]`)
    if (name.endsWith('.ts') && NAME.test(name.slice(0, -3))) throw new CliError(`give the name without ".ts": recipes new ${name.slice(0, -3)} (it becomes ${name.slice(0, -3)}.ts)`)
    // The loader skips files whose name starts with "_" or "." (shared helpers): a recipe named so would never run.
    if (name.startsWith('_')) throw new CliError(`"${name}" cannot be a recipe name: files starting with "_" are shared helpers, which are not loaded as recipes — start it with a letter or digit`)
    // A path ("../x") or a hidden file (".x") was told it was a shared helper's "_".
    if (name.startsWith('.')) throw new CliError(`"${name}" cannot be a recipe name: files starting with "." are hidden (and a name is no path: the file goes in RECIPES_DIR) — start it with a letter or digit`)
    if (!NAME.test(name)) throw new CliError(`"${name}" cannot be a recipe name: use letters, digits, "-" or "_" (it becomes ${name}.ts)`)
    const from = (ctx.values.from ?? 'followup') as string
    if (!(RECIPE_TEMPLATES as readonly string[]).includes(from)) {
      throw new CliError(`--from must be one of ${RECIPE_TEMPLATES.join(', ')} (got "${from}")`)
    }
    const config = await resolveConfig({ env: ctx.env, createsRecipesDir: true })
    const dir = config.recipes.dir
    const file = join(dir, `${name}.ts`)
    if (existsSync(file)) throw new CliError(`${file} already exists: pick another name or edit that file`)
    const created = !existsSync(dir)
    mkdirSync(dir, { recursive: true })
    writeFileSync(file, recipeTemplate(from as RecipeTemplate, name))
    // An editor's view of the folder: without it, one outside the checkout had `switchboard` unresolved on every line.
    const tsconfig = ensureEditorTsconfig(dir)
    const shown = shownPath(file)
    const prefix = recipesDirPrefix(ctx.env, dir)
    const cli = `${prefix}${cliName(ctx.env)}`
    const service = prefix ? `a service started with ${prefix.trim()}` : 'a running service'
    ctx.write(
      [
        ...(created ? [`created the recipes folder ${dir}`] : []),
        `wrote ${shown} (from the ${from} template); ${service} loads it at once and runs it on its events and schedule`,
        ...(tsconfig === 'written' || tsconfig === 'updated'
          ? [`${tsconfig === 'written' ? 'wrote' : 'updated'} ${join(dir, 'tsconfig.json')}: an editor type-checks the folder as recipes check does`]
          : []),
        ...(await sharedTriggers(dir, name, config.recipes.timezone)),
        'next:',
        `  ${cli} recipes check ${name} --watch    # type errors, as file:line:col, again on every save`,
        `  ${cli} recipes run ${name} --dry-run    # the plan: calls, batches, mails`,
        `  ${cli} recipes test ${name}${TEST_INPUT[from as RecipeTemplate]()}`,
        'reference: docs/recipes.md',
        '',
      ].join('\n'),
    )
  },
})
