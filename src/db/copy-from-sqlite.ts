import { sql } from 'kysely'
import type { Store } from './connect.ts'

/**
 * Tables not copied: the migrations' own bookkeeping (the target has its own, at the same version), and the running
 * processes' registry and leases — facts about the processes that used the old database, which start afresh.
 */
const NOT_COPIED = new Set(['switchboard_migrations', 'switchboard_migrations_lock', 'instances', 'leases'])

/** Postgres takes at most 65,535 parameters a statement; rows go in batches well under it. */
const MAX_PARAMETERS = 30_000

export interface TableCopy {
  table: string
  rows: number
}

/** The target already holds data: copying into it would mix two histories (and collide on their keys). */
export class CopyTargetNotEmptyError extends Error {
  override readonly name = 'CopyTargetNotEmptyError'
  constructor(readonly tables: string[]) {
    super(`the Postgres database already holds data (in ${tables.join(', ')}): copy into an empty one (a new database, or a new schema with ?options=-c%20search_path%3D<schema>)`)
  }
}

/** The tables of a SQLite store that hold switchboard's data, in name order. */
export function copiedTables(source: Store): string[] {
  const sqlite = source.sqlite
  if (!sqlite) throw new Error('the source of a copy is a SQLite database')
  const rows = sqlite.prepare("select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name").all() as Array<{ name: string }>
  return rows.map((r) => r.name).filter((name) => !NOT_COPIED.has(name))
}

/** Which of `tables` hold at least one row in `store`. */
export async function tablesWithRows(store: Store, tables: readonly string[]): Promise<string[]> {
  const held: string[] = []
  for (const table of tables) {
    const row = await sql<{ one: number }>`select 1 as one from ${sql.table(table)} limit 1`.execute(store.db)
    if (row.rows.length > 0) held.push(table)
  }
  return held
}

/**
 * Copies every row of a (migrated) SQLite store into a migrated, empty Postgres store at the same schema version, in
 * one Postgres transaction: all of it or nothing. The SQLite side is read in one read transaction, so what is copied is
 * one moment of it even if something still writes there (stop the service first all the same: what arrives after
 * that moment stays behind). Text Postgres cannot hold (U+0000) is written as U+FFFD, as everything switchboard writes
 * there is (src/db/storable-text.ts). `onTable` hears each table as it is done.
 */
export async function copySqliteIntoPostgres(source: Store, target: Store, onTable?: (copy: TableCopy) => void): Promise<TableCopy[]> {
  const sqlite = source.sqlite
  if (!sqlite) throw new Error('the source of a copy is a SQLite database')
  if (target.dialect !== 'postgres') throw new Error('the target of a copy is a Postgres database')
  const tables = copiedTables(source)
  const held = await tablesWithRows(target, tables)
  if (held.length > 0) throw new CopyTargetNotEmptyError(held)
  const copies: TableCopy[] = []
  sqlite.prepare('begin').run()
  try {
    await target.db.transaction().execute(async (trx) => {
      for (const table of tables) {
        const columns = (sqlite.prepare(`select name from pragma_table_info(?) order by cid`).all(table) as Array<{ name: string }>).map((c) => c.name)
        const perBatch = Math.max(1, Math.floor(MAX_PARAMETERS / Math.max(1, columns.length)))
        let rows = 0
        let batch: unknown[][] = []
        const flush = async () => {
          if (batch.length === 0) return
          const values = sql.join(batch.map((row) => sql`(${sql.join(row)})`))
          await sql`insert into ${sql.table(table)} (${sql.join(columns.map((c) => sql.ref(c)))}) values ${values}`.execute(trx)
          rows += batch.length
          batch = []
        }
        for (const row of sqlite.prepare(`select * from "${table.replaceAll('"', '""')}"`).raw().iterate() as Iterable<unknown[]>) {
          batch.push(row)
          if (batch.length >= perBatch) await flush()
        }
        await flush()
        const copy = { table, rows }
        copies.push(copy)
        onTable?.(copy)
      }
    })
  } finally {
    sqlite.prepare('rollback').run()
  }
  return copies
}
