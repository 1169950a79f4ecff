import { existsSync } from 'node:fs'
import { CliError } from './cli-kit.ts'
import { printable } from './utils/printable.ts'
import { parseDatabaseUrl } from './db/database-url.ts'

/**
 * Refuses a command that reads what the service stored (`CliCommand.readsStoredData`) when the configured SQLite
 * database does not exist — a DATA_DIR other than the service's, or a service never started — before anything is
 * created there. Postgres and in-memory databases are left to the command.
 */
export function refuseMissingDatabase(databaseUrl: string, cli: string): void {
  const { dialect, location } = parseDatabaseUrl(databaseUrl)
  if (dialect !== 'sqlite' || location === ':memory:' || existsSync(location)) return
  throw new CliError(
    `no database at ${printable(location)}: nothing is stored there — give this command the DATA_DIR (or DATABASE_URL) the service runs with, or start the service first (${cli} serve)`,
  )
}
