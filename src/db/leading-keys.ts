import { sql, type Kysely } from 'kysely'
import type { Database } from './schema.ts'

/**
 * The distinct values of an index's leading text column, one index probe each (a loose index scan: the next
 * value after the last one found), instead of reading the table or the whole index as `SELECT DISTINCT` would.
 * For columns with few values (destination names, recipe names) on tables with many rows.
 */
export async function leadingKeys<T extends keyof Database & string>(db: Kysely<Database>, table: T, column: keyof Database[T] & string): Promise<string[]> {
  const keys: string[] = []
  for (;;) {
    const last = keys.at(-1)
    const after = last === undefined ? sql`` : sql`where ${sql.ref(column)} > ${last}`
    const { rows } = await sql<{ key: string }>`select ${sql.ref(column)} as key from ${sql.table(table)} ${after} order by ${sql.ref(column)} limit 1`.execute(db)
    const row = rows[0]
    if (!row) return keys
    keys.push(row.key)
  }
}
