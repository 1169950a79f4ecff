import { CliError, defineCommand, JSON_OPTION, type CliCommand } from '../cli-kit.ts'
import { BrokenRecipeError, recipeEngineFor, RecipeRunningError, UnknownRecipeError } from './engine.ts'
import { recipeInfoJson, renderRun, runJson } from './present.ts'
import { recipesCheck } from './check-command.ts'
import { recipesTest } from './test-command.ts'
import { recipesNew } from './new-command.ts'

const recipesList = defineCommand({
  name: 'recipes list',
  summary: 'recipes in RECIPES_DIR: triggers, next run, last run, and why a broken one is broken',
  usage: '[--json]',
  options: { json: JSON_OPTION },
  async run(ctx) {
    const rt = await ctx.runtime()
    const infos = (await recipeEngineFor(rt).list()).map(recipeInfoJson)
    if (ctx.values.json) return void ctx.json(infos)
    if (infos.length === 0) return void ctx.write(`no recipes in ${rt.config.recipes.dir}\n`)
    ctx.table(
      infos.map((r) => ({
        name: r.name,
        schedule: r.schedule ? `${r.schedule} (${r.timezone})` : '',
        on: r.on.join(', '),
        next_run: r.next_run ?? '',
        last_run: r.last_run ? `${r.last_run.status} ${r.last_run.started_at} (${r.last_run.trigger})` : '',
        broken: r.broken ? 'BROKEN (see below)' : '',
      })),
    )
    // Reasons are often longer than a table cell: print them whole.
    for (const r of infos) if (r.broken) ctx.write(`\n${r.name} is broken: ${r.broken}\n  file: ${r.file}\n`)
  },
})

const recipesRun = defineCommand({
  name: 'recipes run',
  summary: 'run a recipe now and print what it did; with --dry-run it only plans (no call, batch or mail)',
  usage: '<name> [--dry-run] [--json]',
  args: [['<name>', 'the recipe\'s file name in RECIPES_DIR, without .ts']],
  options: {
    'dry-run': { type: 'boolean', help: 'only plan: calls, batches and mail are listed, not placed, launched or sent' },
    json: JSON_OPTION,
  },
  examples: ['recipes run nightly-batch --dry-run'],
  async run(ctx) {
    const [name] = ctx.positionals
    if (!name) throw new CliError('which recipe? usage: recipes run <name> [--dry-run] [--json] (see "recipes list")')
    const rt = await ctx.runtime()
    let run
    try {
      run = await recipeEngineFor(rt).run(name, { dryRun: ctx.values['dry-run'] === true })
    } catch (error) {
      if (error instanceof UnknownRecipeError || error instanceof BrokenRecipeError) throw new CliError(error.message)
      // Not a usage mistake: the run could not happen now (the service or a replica is running it), so exit 1.
      if (error instanceof RecipeRunningError) throw new CliError(error.message, 1)
      throw error
    }
    if (ctx.values.json) ctx.json(runJson(run))
    else ctx.write(renderRun(run))
    return run.status === 'failed' ? 1 : 0
  },
})

export const recipeCommands: CliCommand[] = [recipesList, recipesRun, recipesCheck, recipesTest, recipesNew]
