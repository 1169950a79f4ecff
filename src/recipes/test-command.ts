import { resolveConfig } from '../config/file.ts'
import { ArgumentError } from '../utils/argument-error.ts'
import { CliError, defineCommand, JSON_OPTION } from '../cli-kit.ts'
import { renderPlan } from './present.ts'
import { testRecipe } from './test-recipe.ts'
import { decodeSummary, encodeSummary, summaryLine } from './summary.ts'
import { dirname, resolve } from 'node:path'
import { namedRecipeFile } from './named-recipe-file.ts'
import { rerunOnChange } from './rerun-on-change.ts'
import { keepTypeCheckerWarm, warmTypeChecker } from './type-verdicts.ts'
import { watchedFingerprint } from './watch-folder.ts'
import { samplePath } from './sample-path.ts'
import { catchStrayRecipeErrors } from './cli-watchdog.ts'
import { printableLines } from '../utils/printable.ts'
import { csvNameProblem } from './csv-fixture.ts'

/**
 * `recipes test <name> --events file.json | --csv file.csv [--now ISO] [--json]`: a dry run against
 * fixtures on a frozen clock, in a throw-away data folder — no provider, no running service. `--watch` runs it again
 * on every save of the recipe's folder or a fixture; the type-check thread is kept meanwhile, so a save is answered in
 * well under a second (src/recipes/rerun-on-change.ts).
 */
/**
 * testRecipe()'s messages name its options as a recipe's code passes them (`testRecipe(now): …`); typed on the command
 * line they were the flags: said as such (`--now: …`, `--events data/x.json, event [0]: …`).
 */
function asFlags(message: string): string {
  return message
    .replace(/^testRecipe\((now|csv)\): /, '--$1: ')
    .replace(/^testRecipe\(events \((.*?)\)(\[\d+\])?\): /, (_all, file: string, index: string | undefined) => `--events ${file}${index ? `, event ${index}` : ''}: `)
    .replace(/events \([^)]*\)(\[\d+\])/g, 'event $1')
}

export const recipesTest = defineCommand({
  name: 'recipes test',
  runsRecipeCode: true,
  summary: 'dry-run a recipe against sample events (--events) or a contacts CSV (--csv) on a frozen clock; prints the plan',
  usage: '<name> [--events file.json] [--csv file.csv] [--now ISO] [--watch] [--json]',
  args: [['<name>', 'a recipe in RECIPES_DIR (its name, with or without .ts), or a path to a recipe file']],
  options: {
    events: { type: 'string', value: 'file.json', help: 'webhook events as the provider sends them (a JSON list, or { "events": [...] }): applied to the conversations and delivered to the recipe together as one event trigger' },
    csv: { type: 'string', value: 'file.csv', help: "a contacts CSV, copied into the test's data folder's inbox/ and inbox/<name>/, where a batch recipe finds it; named *.csv, as a batch recipe reads no other" },
    watch: {
      type: 'boolean',
      help: "keep testing: run it again each time a file of the recipe's folder (lib/ included) or the --events or --csv file changes — well under a second after the first run — until Ctrl-C; with --json, one JSON object a line per run",
    },
    now: { type: 'string', value: 'ISO', help: 'the frozen clock, e.g. 2026-03-01T10:00:00+05:30 (default: a minute after the last event, else now)' },
    json: JSON_OPTION,
  },
  examples: ['recipes test no-answer-followup --events data/samples/no-answer-events.json', 'recipes test no-answer-followup --events data/samples/no-answer-events.json --watch', 'recipes test nightly-batch --csv data/samples/leads.csv --now 2026-01-15T04:00:00Z'],
  async run(ctx) {
    const [name] = ctx.positionals
    if (!name) throw new CliError('which recipe? usage: recipes test <name> [--events file.json] [--csv file.csv] [--now ISO] [--watch] [--json]')
    const config = await resolveConfig({ env: ctx.env })
    // A run's synchronous loop is stopped after the service's limit for RECIPE_TIMEOUT_SECONDS, as `recipes run` stops
    // it: it was held for the most the service ever waits (60 s), whatever the limit.
    await ctx.limitRecipeRuns(config.pipeline.recipeTimeoutMs)
    const events = typeof ctx.values.events === 'string' ? ctx.values.events : undefined
    const csv = typeof ctx.values.csv === 'string' ? ctx.values.csv : undefined
    const json = Boolean(ctx.values.json)
    // A timer or a promise the run leaves that throws: one line (and, but for --watch, exit 1), not Node's crash after the
    // plan. A recipe given by path may live outside RECIPES_DIR.
    const dirs = [config.recipes.dir, ...(/[\\/]/.test(name) ? [dirname(resolve(name))] : [])]
    const stray = catchStrayRecipeErrors({ dirs, debug: Boolean(ctx.env.DEBUG), failCommand: !ctx.values.watch })
    const test = async (): Promise<number> => {
      stray?.starts()
      let result
      try {
        result = await testRecipe({
          recipe: name,
          recipesDir: config.recipes.dir,
          env: ctx.env,
          // The plan as the service would make it: the numbers on its do-not-call list are refused here too.
          serviceDnc: true,
          ...(events !== undefined ? { events } : {}),
          ...(csv !== undefined ? { csv } : {}),
          ...(typeof ctx.values.now === 'string' ? { now: ctx.values.now } : {}),
        })
      } catch (error) {
        if (error instanceof ArgumentError) throw new CliError(asFlags(error.message))
        throw error
      }
      // What the service would record as the run's summary, not the raw value: `run` may return anything (a BigInt,
      // a cycle), and a run that succeeded must not fail here for want of a way to print it.
      const summary = decodeSummary(encodeSummary(result.result))
      if (json) {
        const { result: _raw, ...rest } = result
        // Watching, each run is a line of its own (a stream read line by line).
        if (ctx.values.watch) ctx.write(`${JSON.stringify({ ...rest, summary })}\n`)
        else ctx.json({ ...rest, summary })
      } else {
        const lines = [
          result.status === 'not_run'
            ? `recipe ${result.recipe}: not run — its \`on\` lists none of these events, so the service would not run it for them`
            : `recipe ${result.recipe}: ${result.status} (dry run on a frozen clock at ${result.now}; nothing was called, launched or mailed)`,
        ]
        if (events === undefined && csv === undefined) {
          // Legitimate (a scheduled recipe's dry run), but an empty throw-away database makes for an empty plan.
          lines.push(`note: no --events or --csv, so it ran as ${result.trigger === 'cron' ? `its scheduled tick at ${result.now} would` : 'a manual run'}, over an empty database; samples: --events ${samplePath('no-answer-events.json')}, --csv ${samplePath('leads.csv')}`)
        }
        for (const w of result.warnings) lines.push(`warning: ${w}`)
        for (const l of result.log) lines.push(`log ${l.level}: ${l.msg}${l.fields ? ` ${JSON.stringify(l.fields)}` : ''}`)
        if (result.error) lines.push(`error: ${result.error}`)
        if (summary !== null) lines.push(`summary: ${summaryLine(summary)}`)
        // The log, error and summary may quote the events or the CSV given: made printable, as the plan is.
        ctx.write(printableLines(lines) + renderPlan(result.plan))
      }
      stray?.ran(result.recipe, result.status)
      return result.status === 'failed' ? 1 : 0
    }
    if (!ctx.values.watch) return test()

    // Watching: the recipe's folder (its helpers) and the fixtures. A name that is no recipe ends it (exit 2), as
    // without --watch, and so does a --csv not named .csv (no save of it changes its name); anything else a run finds —
    // a type error, a fixture that does not parse or is not there yet — is said, and the next save runs it again.
    const csvName = csv === undefined ? undefined : csvNameProblem(csv)
    if (csvName) throw new CliError(`--csv: ${csvName}`)
    const file = namedRecipeFile(name, config.recipes.dir)
    const dir = dirname(resolve(file))
    const fixtures = [events, csv].filter((f): f is string => f !== undefined).map((f) => resolve(f))
    const say = (text: string) => (json ? ctx.writeErr(text) : ctx.write(text))
    const since = watchedFingerprint(dir, fixtures)
    const release = keepTypeCheckerWarm()
    try {
      const runAndSay = async () => {
        try {
          await test()
        } catch (error) {
          say(`error: ${(error as Error).message}\n`)
        }
      }
      await runAndSay()
      // The next save's check then finds the program built (RECIPES_TYPECHECK=false: no check, so no checker).
      if (config.recipes.typeCheck) warmTypeChecker([file])
      return await rerunOnChange({ dir, files: fixtures, since, again: 'testing again', say, rerun: runAndSay, readerGone: ctx.readerGone })
    } finally {
      release()
    }
  },
})
