import { statSync } from 'node:fs'
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
  if (dialect !== 'sqlite' || location === ':memory:' || !isMissing(location)) return
  throw new CliError(
    `no database at ${printable(location)}: nothing is stored there — give this command the DATA_DIR (or DATABASE_URL) the service runs with, or start the service first (${cli} serve)`,
  )
}

/**
 * Known not to be there. A database in a folder this user may not enter (DATA_DIR is its maker's 0700) cannot be
 * looked at — existsSync says false — and was said not to be there, "nothing is stored there": left to the open, which
 * names the folder, its owner and mode.
 */
function isMissing(path: string): boolean {
  try {
    statSync(path)
    return false
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    return code === 'ENOENT' || code === 'ENOTDIR'
  }
}
