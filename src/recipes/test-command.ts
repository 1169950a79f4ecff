import { resolveConfig } from '../config/file.ts'
import { ArgumentError } from '../utils/argument-error.ts'
import { CliError, defineCommand, JSON_OPTION } from '../cli-kit.ts'
import { renderPlan } from './present.ts'
import { testRecipe } from './test-recipe.ts'
import { decodeSummary, encodeSummary, summaryLine } from './summary.ts'

/**
 * `recipes test <name> --events file.json | --csv file.csv [--now ISO] [--json]`: a dry run against
 * fixtures on a frozen clock, in a throw-away data folder — no provider, no running service.
 */
export const recipesTest = defineCommand({
  name: 'recipes test',
  runsRecipeCode: true,
  summary: 'dry-run a recipe against sample events (--events) or a contacts CSV (--csv) on a frozen clock; prints the plan',
  usage: '<name> [--events file.json] [--csv file.csv] [--now ISO] [--json]',
  args: [['<name>', 'a recipe in RECIPES_DIR (its name, with or without .ts), or a path to a recipe file']],
  options: {
    events: { type: 'string', value: 'file.json', help: 'webhook events as the provider sends them (a JSON list, or { "events": [...] }): applied to the conversations and delivered to the recipe together as one event trigger' },
    csv: { type: 'string', value: 'file.csv', help: "a contacts CSV, copied into the test's data folder's inbox/ and inbox/<name>/, where a batch recipe finds it" },
    now: { type: 'string', value: 'ISO', help: 'the frozen clock, e.g. 2026-03-01T10:00:00+05:30 (default: a minute after the last event, else now)' },
    json: JSON_OPTION,
  },
  examples: ['recipes test no-answer-followup --events data/samples/no-answer-events.json', 'recipes test nightly-batch --csv data/samples/leads.csv --now 2026-01-15T04:00:00Z'],
  async run(ctx) {
    const [name] = ctx.positionals
    if (!name) throw new CliError('which recipe? usage: recipes test <name> [--events file.json] [--csv file.csv] [--now ISO] [--json]')
    const config = await resolveConfig({ env: ctx.env })
    let result
    try {
      result = await testRecipe({
        recipe: name,
        recipesDir: config.recipes.dir,
        env: ctx.env,
        ...(typeof ctx.values.events === 'string' ? { events: ctx.values.events } : {}),
        ...(typeof ctx.values.csv === 'string' ? { csv: ctx.values.csv } : {}),
        ...(typeof ctx.values.now === 'string' ? { now: ctx.values.now } : {}),
      })
    } catch (error) {
      if (error instanceof ArgumentError) throw new CliError(error.message)
      throw error
    }
    // What the service would record as the run's summary, not the raw value: `run` may return anything (a BigInt,
    // a cycle), and a run that succeeded must not fail here for want of a way to print it.
    const summary = decodeSummary(encodeSummary(result.result))
    if (ctx.values.json) {
      const { result: _raw, ...rest } = result
      ctx.json({ ...rest, summary })
    } else {
      const lines = [`recipe ${result.recipe}: ${result.status} (dry run on a frozen clock at ${result.now}; nothing was called, launched or mailed)`]
      if (typeof ctx.values.events !== 'string' && typeof ctx.values.csv !== 'string') {
        // Legitimate (a scheduled recipe's dry run), but an empty throw-away database makes for an empty plan.
        lines.push(`note: no --events or --csv, so it ran as ${result.trigger === 'cron' ? `its scheduled tick at ${result.now} would` : 'a manual run'}, over an empty database; samples: --events data/samples/no-answer-events.json, --csv data/samples/leads.csv`)
      }
      for (const w of result.warnings) lines.push(`warning: ${w}`)
      for (const l of result.log) lines.push(`log ${l.level}: ${l.msg}${l.fields ? ` ${JSON.stringify(l.fields)}` : ''}`)
      if (result.error) lines.push(`error: ${result.error}`)
      if (summary !== null) lines.push(`summary: ${summaryLine(summary)}`)
      ctx.write(lines.join('\n') + '\n' + renderPlan(result.plan))
    }
    return result.status === 'failed' ? 1 : 0
  },
})
