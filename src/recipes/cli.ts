import { CliError, defineCommand, intFlag, isoFlag, JSON_OPTION, limitOption, type CliCommand } from '../cli-kit.ts'
import { BrokenRecipeError, recipeEngineFor, RecipeRunningError, RetryRunsAloneError, UnknownRecipeError } from './engine.ts'
import { recipeNameOf } from './find-recipe-file.ts'
import { recipeInfoJson, recipeListingJson, removedRecipes, renderRun, runJson } from './present.ts'
import { listRuns } from './runner.ts'
import { planSize } from './kept-plan.ts'
import { summaryLine } from './summary.ts'
import { recipesCheck } from './check-command.ts'
import { recipesTest } from './test-command.ts'
import { recipesNew } from './new-command.ts'
import { unknownRecipeForRuns } from './unknown-runs-name.ts'
import { catchStrayRecipeErrors, whenCliWatchdogStops } from './cli-watchdog.ts'
import { closeOwnRunsLeftRunning } from './keep-closing.ts'
import { discardRecipeQueue, isStranded, QueueControlError, recipeQueueCounts, retryRecipeEvents, runsItsQueue } from './queue-control.ts'

const recipesList = defineCommand({
  name: 'recipes list',
  runsRecipeCode: true,
  summary: 'recipes in RECIPES_DIR: triggers, next run, last run, and why a broken one is broken',
  usage: '[--json]',
  options: { json: JSON_OPTION },
  async run(ctx) {
    const rt = await ctx.runtime()
    const recipes = await recipeEngineFor(rt).list()
    const queues = await recipeQueueCounts(rt)
    if (ctx.values.json) return void ctx.json(recipeListingJson(recipes, queues))
    const infos = recipes.map((info) => recipeInfoJson(info, queues.get(info.name)))
    const removed = removedRecipes(recipes, queues)
    if (infos.length === 0 && removed.length === 0) return void ctx.write(`no recipes in ${rt.config.recipes.dir}\n`)
    if (infos.length > 0) {
      ctx.table(
        infos.map((r) => ({
          name: r.name,
          schedule: r.schedule ? `${r.schedule} (${r.timezone})` : '',
          on: r.on.join(', '),
          next_run: r.next_run ?? '',
          last_run: r.last_run ? `${r.last_run.status} ${r.last_run.started_at} (${r.last_run.trigger})` : '',
          queue: r.on.length > 0 || r.queue.queued + r.queue.dead > 0 ? `${r.queue.queued} waiting, ${r.queue.dead} dead` : '',
          broken: r.broken ? 'BROKEN (see below)' : '',
        })),
      )
    }
    // Reasons are often longer than a table cell: print them whole.
    for (const r of infos) if (r.broken) ctx.write(`\n${r.name} is broken: ${r.broken}\n  file: ${r.file}\n`)
    for (const r of infos) {
      if (r.queue.dead > 0 && runsItsQueue(r)) ctx.write(`\n${r.name}: ${r.queue.dead} ${r.queue.dead === 1 ? 'event' : 'events'} given up on after their retries; once the cause is fixed, run them again: recipes retry ${r.name}\n`)
      // Taken out of `on` with events still waiting: nothing runs those.
      if (isStranded(r, r.queue)) ctx.write(`\n${r.name}: takes no events now, with ${r.queue.queued} still waiting that nothing runs: give them up: recipes discard ${r.name}\n`)
    }
    for (const [name, q] of removed) ctx.write(`\n${name}: no longer in ${rt.config.recipes.dir}, with ${q.queued} ${q.queued === 1 ? 'event' : 'events'} still waiting that nothing runs: put the file back, or give them up: recipes discard ${name}\n`)
  },
})

const recipesRun = defineCommand({
  name: 'recipes run',
  runsRecipeCode: true,
  summary: 'run a recipe now and print what it did; with --dry-run it only plans (no call, batch or mail)',
  usage: '<name> [--dry-run] [--json]',
  args: [['<name>', 'the recipe\'s file name in RECIPES_DIR, without .ts']],
  options: {
    'dry-run': { type: 'boolean', help: 'only plan: calls, batches and mail are listed, not placed, launched or sent' },
    json: JSON_OPTION,
  },
  examples: ['recipes run nightly-batch --dry-run'],
  async run(ctx) {
    const name = ctx.positionals[0] === undefined ? undefined : recipeNameOf(ctx.positionals[0])
    if (!name) throw new CliError('which recipe? usage: recipes run <name> [--dry-run] [--json] (see "recipes list")')
    const rt = await ctx.runtime()
    // A timer or a promise the run leaves that throws: one line and exit 1, not Node's crash after "succeeded".
    const stray = catchStrayRecipeErrors({ dirs: [rt.config.recipes.dir], debug: Boolean(ctx.env.DEBUG), failCommand: true })
    // Code that never returns is stopped by the CLI's watchdog, which ends the process: the run's row is closed first,
    // or it read `running` for an hour (a dry run's: nothing else ever closes it).
    const closeOnStop = whenCliWatchdogStops((held) =>
      closeOwnRunsLeftRunning(rt, name, `stopped: its code held the command for ${held} s without returning (a synchronous loop in run?)`),
    )
    let run
    try {
      run = await recipeEngineFor(rt).run(name, { dryRun: ctx.values['dry-run'] === true })
    } catch (error) {
      if (error instanceof UnknownRecipeError || error instanceof BrokenRecipeError) throw new CliError(error.message)
      // Not a usage mistake: the run could not happen now (the service or a replica is running it), so exit 1.
      if (error instanceof RecipeRunningError || error instanceof RetryRunsAloneError) throw new CliError(error.message, 1)
      throw error
    } finally {
      closeOnStop()
    }
    if (ctx.values.json) ctx.json(runJson(run))
    else ctx.write(renderRun(run))
    stray?.ran(name, run.status)
    return run.status === 'failed' ? 1 : 0
  },
})

const recipesRuns = defineCommand({
  name: 'recipes runs',
  readsStoredData: true,
  summary: 'recorded runs, newest first: trigger, status, start, how long, summary, error (also of recipes since removed)',
  usage: '[name] [--limit N] [--json]',
  args: [['[name]', 'only this recipe\'s runs (default: every recipe\'s)']],
  options: { limit: limitOption(10_000), json: JSON_OPTION },
  examples: ['recipes runs nightly-batch --limit 5'],
  async run(ctx) {
    const name = ctx.positionals[0] === undefined ? undefined : recipeNameOf(ctx.positionals[0])
    const limit = intFlag(ctx.values, 'limit', 50)!
    if (limit < 1 || limit > 10_000) throw new CliError('--limit must be from 1 to 10000')
    const rt = await ctx.runtime()
    const runs = await listRuns(rt, { ...(name ? { recipe: name } : {}), limit })
    const unknown = name === undefined ? undefined : unknownRecipeForRuns(rt.config.recipes.dir, name, runs.length)
    if (unknown) throw new CliError(unknown)
    // The plan is the run's own record (`recipes run --json`, the dashboard): a listing keeps to one row a run.
    if (ctx.values.json) return void ctx.json(runs.map((r) => ({ ...runJson(r), plan: undefined, plan_omitted: undefined, planned: planSize({ effects: r.plan, omitted: r.planOmitted }) })))
    ctx.table(
      runs.map((r) => ({
        started_at: new Date(r.startedAt).toISOString(),
        recipe: r.recipe,
        trigger: r.trigger,
        status: `${r.status}${r.dryRun ? ' (dry run)' : ''}`,
        took: r.endedAt === null ? 'running' : `${((r.endedAt - r.startedAt) / 1000).toFixed(1)} s`,
        summary: r.summary === null ? '' : summaryLine(r.summary),
        error: r.error ?? '',
      })),
    )
  },
})

const recipesRetry = defineCommand({
  name: 'recipes retry',
  readsStoredData: true,
  runsRecipeCode: true,
  summary: 'run again the events a recipe gave up on (dead) or waits to retry, e.g. after the system it calls was down',
  usage: '<name> [--since ISO] [--until ISO] [--json]',
  args: [['<name>', 'the event-triggered recipe (recipes list shows its waiting and dead events)']],
  options: {
    since: { type: 'string', value: 'ISO', help: 'only events queued for it at or after this time, e.g. 2026-03-01T00:00:00Z (default: all)' },
    until: { type: 'string', value: 'ISO', help: 'and before this time (default: no end)' },
    json: JSON_OPTION,
  },
  examples: ['recipes retry crm-sync', 'recipes retry crm-sync --since 2026-03-01T08:00:00Z'],
  async run(ctx) {
    const name = ctx.positionals[0] === undefined ? undefined : recipeNameOf(ctx.positionals[0])
    if (!name) throw new CliError('which recipe? usage: recipes retry <name> [--since ISO] [--until ISO] (see "recipes list")')
    const since = isoFlag(ctx.values, 'since')
    const until = isoFlag(ctx.values, 'until')
    if (since !== undefined && until !== undefined && until <= since) throw new CliError('--until must be after --since')
    const rt = await ctx.runtime()
    let queued
    try {
      queued = await retryRecipeEvents(rt, name, { ...(since === undefined ? {} : { since }), ...(until === undefined ? {} : { until }) })
    } catch (error) {
      if (error instanceof QueueControlError) throw new CliError(error.message)
      throw error
    }
    if (ctx.values.json) return void ctx.json({ queued })
    ctx.write(`${name}: ${queued} events queued again; the running service runs them within a second, each once\n`)
  },
})

const recipesDiscard = defineCommand({
  name: 'recipes discard',
  readsStoredData: true,
  runsRecipeCode: true,
  summary: 'give up on the events still waiting for a recipe that nothing runs any more: its file removed, or its on taken out (they go dead)',
  usage: '<name> [--json]',
  args: [['<name>', 'the recipe (recipes list names one whose events wait with nothing to run them)']],
  options: { json: JSON_OPTION },
  async run(ctx) {
    const name = ctx.positionals[0] === undefined ? undefined : recipeNameOf(ctx.positionals[0])
    if (!name) throw new CliError('which recipe? usage: recipes discard <name> (see "recipes list")')
    const rt = await ctx.runtime()
    let discarded
    try {
      discarded = await discardRecipeQueue(rt, name)
    } catch (error) {
      if (error instanceof QueueControlError) throw new CliError(error.message)
      throw error
    }
    if (ctx.values.json) return void ctx.json({ discarded })
    ctx.write(`${name}: ${discarded} waiting ${discarded === 1 ? 'event' : 'events'} given up (dead)\n`)
  },
})

export const recipeCommands: CliCommand[] = [recipesList, recipesRun, recipesRuns, recipesRetry, recipesDiscard, recipesCheck, recipesTest, recipesNew]
