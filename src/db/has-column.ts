import type { Kysely } from 'kysely'

/**
 * Whether a table of the connection's own schema has a column (Postgres introspection: src/db/schema-introspector.ts).
 * Migrations ask before ADD COLUMN: SQLite has none of IF NOT EXISTS and migrates without a transaction, so a step
 * may run again after a crash half-way.
 */
// Kysely<any> is what kysely's Migration interface takes: migrations must not depend on today's schema type.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function hasColumn(db: Kysely<any>, table: string, column: string): Promise<boolean> {
  const tables = await db.introspection.getTables()
  return Boolean(tables.find((t) => t.name === table)?.columns.some((c) => c.name === column))
}
