import {
  DEFAULT_MIGRATION_LOCK_TABLE,
  DEFAULT_MIGRATION_TABLE,
  PostgresDialect,
  sql,
  type DatabaseIntrospector,
  type DatabaseMetadataOptions,
  type Dialect,
  type Kysely,
  type TableMetadata,
} from 'kysely'

interface ColumnRow {
  schema: string
  table: string
  table_type: string
  column: string
  not_null: boolean
  has_default: boolean
  auto_incrementing: boolean
  type: string
  type_schema: string
  comment: string | null
}

/**
 * kysely's Postgres introspection, limited to the connection's own schema (`current_schema()`).
 *
 * kysely's own reads every table of every schema in the database, and names each table in
 * `pg_get_serial_sequence` as it goes: another schema renaming or dropping a table at that moment fails the
 * whole query with "relation … does not exist". The Migrator introspects before every migration run and on
 * every `isMigrated` (so on every `/readyz`), so in a database shared with other applications (or test runs)
 * someone else's DDL could fail switchboard's start-up or report it unready, and the scan grows with
 * everything else stored there. This reads the catalog only, for one schema: a serial column is one whose
 * default draws from a sequence (`nextval(…)`) or an identity column, never found by looking a name up. (A
 * correlated subquery on `pg_depend` instead made Postgres JIT-compile the query: 0.4 s for each call.)
 */
export function createSchemaIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
  async function getTables(options: DatabaseMetadataOptions = { withInternalKyselyTables: false }): Promise<TableMetadata[]> {
    const { rows } = await sql<ColumnRow>`
      select ns.nspname as "schema", c.relname as "table", c.relkind as table_type, a.attname as "column", a.attnotnull as not_null,
        a.atthasdef as has_default, typ.typname as "type", tns.nspname as type_schema,
        col_description(a.attrelid, a.attnum) as "comment",
        (a.attidentity <> '' or coalesce(pg_get_expr(ad.adbin, ad.adrelid) like 'nextval(%', false)) as auto_incrementing
      from pg_catalog.pg_attribute a
      join pg_catalog.pg_class c on c.oid = a.attrelid
      join pg_catalog.pg_namespace ns on ns.oid = c.relnamespace
      join pg_catalog.pg_type typ on typ.oid = a.atttypid
      join pg_catalog.pg_namespace tns on tns.oid = typ.typnamespace
      left join pg_catalog.pg_attrdef ad on ad.adrelid = a.attrelid and ad.adnum = a.attnum
      where ns.nspname = current_schema() and c.relkind in ('r', 'v', 'p') and a.attnum > 0 and not a.attisdropped
      order by c.relname, a.attnum`.execute(db)
    const internal = new Set<string>([DEFAULT_MIGRATION_TABLE, DEFAULT_MIGRATION_LOCK_TABLE])
    const tables = new Map<string, TableMetadata>()
    for (const row of rows) {
      if (!options.withInternalKyselyTables && internal.has(row.table)) continue
      let table = tables.get(row.table)
      if (!table) {
        table = { name: row.table, isView: row.table_type === 'v', columns: [], schema: row.schema }
        tables.set(row.table, table)
      }
      table.columns.push({
        name: row.column,
        dataType: row.type,
        dataTypeSchema: row.type_schema,
        isAutoIncrementing: row.auto_incrementing,
        isNullable: !row.not_null,
        hasDefaultValue: row.has_default,
        ...(row.comment !== null ? { comment: row.comment } : {}),
      })
    }
    return [...tables.values()]
  }
  return {
    async getSchemas() {
      const { rows } = await sql<{ name: string }>`select nspname as name from pg_catalog.pg_namespace`.execute(db)
      return rows
    },
    getTables,
    async getMetadata(options) {
      return { tables: await getTables(options) }
    },
  }
}

/** kysely's PostgresDialect with `createSchemaIntrospector` as its introspection. */
export function schemaScopedPostgres(dialect: PostgresDialect): Dialect {
  return {
    createDriver: () => dialect.createDriver(),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createAdapter: () => dialect.createAdapter(),
    createIntrospector: (db) => createSchemaIntrospector(db),
  }
}
