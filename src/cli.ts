import { parseArgs } from 'node:util'
import { ConfigError, ensureSandboxSecret } from './config/load.ts'
import { resolveConfig } from './config/file.ts'
import { migrate, openStore } from './db/connect.ts'
import pino from 'pino'
import { createRuntime, type Runtime } from './runtime.ts'
import { createLogger } from './utils/logger.ts'
import { startServer } from './server.ts'
import { CliError, defineCommand, formatTable, type CliCommand, type CliContext } from './utils/cli-kit.ts'
import { callsCommands } from './calls/commands.ts'
import { reportSendCommand } from './reports/cli.ts'
import { webhookCommands } from './webhooks/commands.ts'
import { recipeCommands } from './recipes/cli.ts'
import { sandboxCommand } from './sandbox/commands.ts'

const serveCommand = defineCommand({
  name: 'serve',
  summary: 'run the service (webhook receiver, /v1 proxy, recipes; the sandbox too when no VOICE_API_KEY is set)',
  async run(ctx) {
    const server = await startServer({ env: ctx.env, banner: true })
    await new Promise<void>((resolve) => {
      const stop = () => resolve()
      process.once('SIGINT', stop)
      process.once('SIGTERM', stop)
    })
    process.stdout.write('\nshutting down…\n')
    await server.close()
  },
})

const migrateCommand = defineCommand({
  name: 'migrate',
  summary: 'apply database migrations and exit',
  options: { json: { type: 'boolean' } },
  async run(ctx) {
    const config = await resolveConfig({ env: ctx.env })
    const store = await openStore(config.databaseUrl)
    try {
      const { applied } = await migrate(store)
      if (ctx.values.json) ctx.json({ applied, database: store.dialect })
      else ctx.write(applied.length ? `applied ${applied.join(', ')}\n` : 'database is up to date\n')
    } finally {
      await store.close()
    }
  },
})

/** Every command; features add theirs here. */
export const commands: CliCommand[] = [serveCommand, sandboxCommand, migrateCommand, reportSendCommand, ...webhookCommands, ...callsCommands, ...recipeCommands]

function help(): string {
  const width = Math.max(...commands.map((c) => (c.name + (c.usage ? ` ${c.usage}` : '')).length))
  return [
    'usage: switchboard <command> [options]   (from a checkout: npm run -s cli -- <command>)',
    '',
    ...commands.map((c) => `  ${(c.name + (c.usage ? ` ${c.usage}` : '')).padEnd(width)}  ${c.summary}`),
    '',
    'Listings accept --json. Configuration comes from the environment (see README → Configuration).',
    '',
  ].join('\n')
}

function findCommand(argv: string[]): { command: CliCommand; rest: string[] } | undefined {
  // Longest match first: "events list" before "events".
  const sorted = [...commands].sort((a, b) => b.name.split(' ').length - a.name.split(' ').length)
  for (const command of sorted) {
    const words = command.name.split(' ')
    if (words.every((w, i) => argv[i] === w)) return { command, rest: argv.slice(words.length) }
  }
  return undefined
}

export interface MainOptions {
  env?: Record<string, string | undefined>
  stdout?: (text: string) => void
  stderr?: (text: string) => void
}

/** Runs one CLI command; returns the exit code. */
export async function main(argv: string[], options: MainOptions = {}): Promise<number> {
  const env = options.env ?? process.env
  const out = options.stdout ?? ((t: string) => void process.stdout.write(t))
  const err = options.stderr ?? ((t: string) => void process.stderr.write(t))
  if (argv.length === 0 || argv[0] === 'help' || argv[0] === '--help' || argv[0] === '-h') {
    out(help())
    return argv.length === 0 ? 2 : 0
  }
  const found = findCommand(argv)
  if (!found) {
    err(`error: unknown command "${argv.join(' ')}". Run "switchboard help" for the list.\n`)
    return 2
  }
  const { command, rest } = found
  let runtime: Runtime | undefined
  try {
    const parsed = parseArgs({ args: rest, options: { ...command.options, help: { type: 'boolean' } }, allowPositionals: true, strict: true })
    if (parsed.values.help) {
      out(`usage: switchboard ${command.name}${command.usage ? ` ${command.usage}` : ''}\n  ${command.summary}\n`)
      return 0
    }
    const ctx: CliContext = {
      values: parsed.values,
      positionals: parsed.positionals,
      env,
      async runtime() {
        if (!runtime) {
          const config = ensureSandboxSecret(await resolveConfig({ env }))
          // Logs go to stderr so a command's stdout (tables, --json) stays clean.
          runtime = await createRuntime(config, { log: createLogger({ level: config.logLevel, destination: pino.destination({ dest: 2, sync: true }) }) })
        }
        return runtime
      },
      write: out,
      json: (value) => out(JSON.stringify(value, null, 2) + '\n'),
      table: (rows, columns) => out(formatTable(rows, columns)),
    }
    const code = await command.run(ctx)
    return typeof code === 'number' ? code : 0
  } catch (error) {
    if (error instanceof CliError || error instanceof ConfigError) {
      err(`error: ${error.message}\n`)
      return error instanceof CliError ? error.exitCode : 2
    }
    if (error instanceof TypeError && (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      err(`error: ${error.message}. Run "switchboard ${command.name} --help".\n`)
      return 2
    }
    err(`error: ${(error as Error).message ?? String(error)}\n`)
    if (env.DEBUG) err(`${(error as Error).stack}\n`)
    return 1
  } finally {
    await runtime?.close()
  }
}
