import { existsSync } from 'node:fs'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import type { Store } from './connect.ts'
import { tablesWithRows } from './copy-from-sqlite.ts'

/** The tables whose loss a move to Postgres must not hide: the calls made, the numbers never to call, the events' ids. */
const KEPT: ReadonlyArray<[table: string, what: string]> = [
  ['webhook_events', 'webhook events'],
  ['dnc', 'do-not-call numbers'],
  ['calls', 'calls'],
]

export interface LeftInSqlite {
  /** The SQLite database in DATA_DIR. */
  file: string
  /** What it holds that the Postgres database in use has none of ("do-not-call numbers", …). */
  kinds: string[]
}

/**
 * What the SQLite database a deployment used before (DATA_DIR/switchboard.db) holds that the Postgres database it runs
 * on now has none of: a move to Postgres done by pointing DATABASE_URL at a new database starts empty, and its
 * do-not-call list, call ledger and de-duplication ids stay behind in the file, unread (an operator probe: an opted-out
 * number was called). Undefined on SQLite, without such a file, or when Postgres has them too. Never throws: a file
 * that cannot be read is not this check's to report.
 */
export async function leftInSqlite(dataDir: string, store: Store): Promise<LeftInSqlite | undefined> {
  if (store.dialect !== 'postgres') return undefined
  const file = join(dataDir, 'switchboard.db')
  if (!existsSync(file)) return undefined
  const held: Array<[string, string]> = []
  try {
    const sqlite = new BetterSqlite3(file, { readonly: true, fileMustExist: true })
    try {
      for (const [table, what] of KEPT) {
        try {
          if (sqlite.prepare(`select 1 from "${table}" limit 1`).get() !== undefined) held.push([table, what])
        } catch {
          // Not a switchboard database (or an older one without the table): nothing of this kind in it.
        }
      }
    } finally {
      sqlite.close()
    }
  } catch {
    return undefined
  }
  if (held.length === 0) return undefined
  const onPostgres = new Set(await tablesWithRows(store, held.map(([table]) => table)).catch(() => held.map(([table]) => table)))
  const kinds = held.filter(([table]) => !onPostgres.has(table)).map(([, what]) => what)
  return kinds.length > 0 ? { file, kinds } : undefined
}

/** The problem and what to do about it, in one line each (the start-up warning, doctor). */
export function describeLeftInSqlite(left: LeftInSqlite, cli = 'switchboard'): { problem: string; fix: string } {
  const list = left.kinds.length > 1 ? `${left.kinds.slice(0, -1).join(', ')} and ${left.kinds.at(-1)}` : left.kinds[0]!
  return {
    problem: `${left.file} holds ${list} that this Postgres database has none of; the service does not read that file (DATABASE_URL is Postgres)`,
    fix: `copy it into an empty Postgres database: ${cli} migrate --copy-from ${left.file} (README → Running on Postgres), or move the file aside if starting afresh was meant`,
  }
}
