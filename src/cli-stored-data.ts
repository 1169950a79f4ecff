import { statSync } from 'node:fs'
import { CliError } from './cli-kit.ts'
import { printable } from './utils/printable.ts'
import { parseDatabaseUrl } from './db/database-url.ts'
import { shownUrl } from './utils/shown-url.ts'

/**
 * Refuses a command that reads what the service stored (`CliCommand.readsStoredData`) when the configured database
 * holds nothing of the service's — a DATA_DIR other than the service's, a Postgres database it never used (another
 * name, none given: the driver's default), or a service never started — before anything is created there: the
 * command's runtime migrates what it opens, and `events list` laid switchboard's tables into whatever database the URL
 * named. An in-memory database is left to the command; a Postgres server that does not answer too (its open says why).
 */
export async function refuseMissingDatabase(databaseUrl: string, cli: string): Promise<void> {
  const { dialect, location } = parseDatabaseUrl(databaseUrl)
  if (dialect === 'postgres') return refuseUnusedPostgres(databaseUrl, cli)
  if (location === ':memory:' || !isMissing(location)) return
  throw new CliError(
    `no database at ${printable(location)}: nothing is stored there — give this command the DATA_DIR (or DATABASE_URL) the service runs with, or start the service first (${cli} serve)`,
  )
}

async function refuseUnusedPostgres(databaseUrl: string, cli: string): Promise<void> {
  // Imported here: every command's start would load the database drivers for the few that read Postgres.
  const { hasAnyMigration, openStore } = await import('./db/connect.ts')
  let used: boolean
  const store = await openStore(databaseUrl).catch(() => undefined)
  if (!store) return
  try {
    used = await hasAnyMigration(store)
  } catch {
    return
  } finally {
    await store.close().catch(() => undefined)
  }
  if (used) return
  throw new CliError(
    `no switchboard tables in ${shownUrl(databaseUrl)}: nothing is stored there — give this command the DATABASE_URL the service runs with (with its database name), or start the service first (${cli} serve; ${cli} migrate creates the tables)`,
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
