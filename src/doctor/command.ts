import { existsSync } from 'node:fs'
import { ConfigError, ensureSandboxSecret, type Config } from '../config/load.ts'
import { resolveConfig } from '../config/file.ts'
import { openMigratedMemoryStore, openStore, parseDatabaseUrl, type Store } from '../db/connect.ts'
import { createRuntime, type Runtime } from '../runtime.ts'
import { setLoadWatch, type LoadWatch } from '../recipes/load-watch.ts'
import { cliLoadWatch } from '../recipes/cli-watchdog.ts'
import { defineCommand, JSON_OPTION } from '../cli-kit.ts'
import { cliName } from '../utils/cli-name.ts'
import { createSilentLogger } from '../utils/logger.ts'
import { describeError, ok, problem, skipped, type CheckResult } from './check.ts'
import { checkDatabase, checkDataFolders, checkDisk, checkRecipes, checkService, checkSmtp, checkUpstreamKey, checkWebhookUrl, serviceIsUp } from './checks.ts'
import { sqliteFileTrouble } from '../db/open-error.ts'

const CHECKS = ['configuration', 'database', 'recipes', 'smtp', 'upstream key', 'webhook url', 'disk', 'folders', 'service'] as const

/** Runs every check in order; a check that needs what an earlier one found broken is skipped with that reason. */
export async function runDoctor(env: Record<string, string | undefined>, options: { loadWatch?: LoadWatch } = {}): Promise<CheckResult[]> {
  const results: CheckResult[] = []
  // How the hints name the CLI: as the user typed it (src/utils/cli-name.ts).
  const cli = cliName(env)
  // The free space where DATA_DIR is needs no database: measured even when the database is what failed (a full disk
  // is one reason it cannot be opened, and the database line's own hint names it).
  let dataDir: string | undefined
  const skipRest = (reason: string) => {
    // The disk and the folders need no database either: a full disk or a folder another user made are reasons it cannot be opened.
    const looked: Partial<Record<(typeof CHECKS)[number], (dir: string) => CheckResult>> = { disk: checkDisk, folders: checkDataFolders }
    for (const name of CHECKS) {
      if (results.some((r) => r.name === name)) continue
      const look = looked[name]
      results.push(look && dataDir !== undefined ? look(dataDir) : skipped(name, reason))
    }
    return results
  }
  let config: Config
  try {
    config = ensureSandboxSecret(await resolveConfig({ env }), { create: false })
    const source = config.configFile ? `, config file ${config.configFile}` : ''
    results.push(ok('configuration', `${config.sandboxMode ? 'sandbox mode (no VOICE_API_KEY)' : `provider ${config.upstreamBaseUrl}`}${source}`))
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    results.push(problem('configuration', error.message.replace(/^Invalid configuration: /, ''), 'fix that setting (README → Configuration)'))
    return skipRest('needs a valid configuration')
  }

  // A SQLite file not made yet is a fresh install, not a problem — and doctor, which only looks, does not make it. The
  // checks after it still run, on an empty database in memory: the recipes load or do not, the relay answers or does
  // not, whatever the service has stored (on a fresh install every one of them was skipped, the recipes' too).
  dataDir = config.dataDir
  const { dialect, location } = parseDatabaseUrl(config.databaseUrl)
  const fresh = dialect === 'sqlite' && location !== ':memory:' && !existsSync(location)
  let store: Store
  try {
    store = fresh ? await openMigratedMemoryStore() : await openStore(config.databaseUrl)
  } catch (error) {
    // A SQLite file is "up" whenever it can be opened: what stands in the way is the file system (owner, mode, a
    // read-only mount, a full disk), as the start-up line says.
    // A damaged file, a full disk, an I/O error: what serve says to do about it (doctor said to check the file's owner
    // and mode for a file that was not a database at all).
    const code = (error as { code?: unknown } | null)?.code
    const trouble = dialect === 'sqlite' ? sqliteFileTrouble(typeof code === 'string' ? code : undefined) : undefined
    const fix = trouble ?? (dialect === 'sqlite' ? 'check that this process can write DATA_DIR and the database file (owner, mode, a read-only mount) and that the disk has room' : 'check DATABASE_URL and that the database is up')
    results.push(problem('database', `cannot open ${config.databaseUrl.split(':')[0]}: ${describeError(error)}`, fix))
    return skipRest('needs the database')
  }
  let rt: Runtime | undefined
  try {
    if (fresh) {
      results.push(ok('database', `not created yet: ${cli === 'npm start' ? 'npm start' : `npm start (or ${cli} migrate)`} creates ${location}`))
    } else {
      // A problem of the database's (a Postgres schema that does not exist, say) is this check's line, not doctor's exit 2.
      const database = await checkDatabase(store, cli, config.dataDir).catch((error: unknown) =>
        problem('database', describeError(error).replace(/^Invalid configuration: /, ''), 'fix what the message names (README → Running on Postgres)'),
      )
      results.push(database)
      if (database.status === 'problem') return skipRest('needs a reachable, migrated database')
    }
    // The runtime borrows the store: doctor never migrates, it only reports.
    try {
      rt = await createRuntime(config, { store, skipMigrate: true, log: createSilentLogger() })
      // As the CLI: a recipe file whose top-level code never returns is named by the command's watchdog.
      if (options.loadWatch) setLoadWatch(rt, options.loadWatch)
    } catch (error) {
      results.push(problem('recipes', `the service cannot start here: ${describeError(error)}`, 'fix what the message names (README → Configuration)'))
      return skipRest('needs the service to start')
    }
    // A check that fails in a way it did not foresee is reported as that check's problem, not a crash of doctor.
    const guarded = async (name: (typeof CHECKS)[number], check: () => Promise<CheckResult>): Promise<CheckResult> => {
      try {
        return await check()
      } catch (error) {
        return problem(name, `the check itself failed: ${describeError(error)}`, 'see the message; the other checks still ran')
      }
    }
    const runtime = rt
    results.push(await guarded('recipes', () => checkRecipes(runtime, cli)))
    results.push(await guarded('smtp', () => checkSmtp(runtime)))
    const up = await serviceIsUp(config)
    results.push(await guarded('upstream key', () => checkUpstreamKey(runtime, up)))
    results.push(await guarded('webhook url', () => checkWebhookUrl(runtime, up)))
    results.push(checkDisk(config.dataDir))
    results.push(checkDataFolders(config.dataDir))
    results.push(await guarded('service', () => checkService(runtime, up)))
    return results
  } finally {
    await rt?.close()
    await store.close()
  }
}

const MARK = { ok: 'ok     ', problem: 'PROBLEM', skipped: 'skipped' } as const

export const doctorCommand = defineCommand({
  name: 'doctor',
  runsRecipeCode: true,
  usage: '[--json]',
  summary: 'check configuration, recipes, database, SMTP, the provider key, the webhook URL, the disk and the data folders; one line each, exit 1 on a problem',
  options: { json: JSON_OPTION },
  async run(ctx) {
    const results = await runDoctor(ctx.env, { loadWatch: cliLoadWatch() })
    const problems = results.filter((r) => r.status === 'problem')
    if (ctx.values.json) {
      ctx.json({ ok: problems.length === 0, checks: results.map((r) => ({ name: r.name, status: r.status, detail: r.detail, fix: r.fix ?? null })) })
    } else {
      const width = Math.max(...results.map((r) => r.name.length))
      for (const r of results) ctx.write(`${MARK[r.status]}  ${r.name.padEnd(width)}  ${r.detail}${r.fix ? ` → ${r.fix}` : ''}\n`)
      const skippedChecks = results.filter((r) => r.status === 'skipped').length
      const unchecked = skippedChecks ? ` (${skippedChecks} check${skippedChecks === 1 ? '' : 's'} skipped, see above)` : ''
      // The service not answering is what a "no problems" read after a check of a stopped service (or of another port's)
      // most needs to say: its own line is up among the others.
      const down = results.find((r) => r.name === 'service' && r.status === 'skipped')
      const found = problems.length ? `doctor: ${problems.length} problem(s) to fix` : down ? `doctor: no problems found in what could be checked — the service is ${down.detail}` : 'doctor: no problems found'
      ctx.write(`${found}${unchecked}\n`)
    }
    return problems.length ? 1 : 0
  },
})
