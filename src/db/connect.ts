import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import pg from 'pg'
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql } from 'kysely'
import type { Database } from './schema.ts'
import { migrationProvider } from './migrations.ts'

export type Dialect = 'sqlite' | 'postgres'

export interface Store {
  db: Kysely<Database>
  dialect: Dialect
  /** The better-sqlite3 handle (SQLite only), for the few paths that need synchronous batched writes. */
  sqlite: BetterSqlite3.Database | undefined
  /** The pg pool (Postgres only). */
  pool: pg.Pool | undefined
  close(): Promise<void>
}

export interface OpenOptions {
  /** Postgres: a schema to create and use (tests give each run its own). */
  schema?: string
  /** Postgres pool size. */
  poolSize?: number
}

/** Parses `sqlite:<path>` (relative paths resolve against cwd) or `postgres://…`. */
export function parseDatabaseUrl(url: string): { dialect: Dialect; location: string } {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '')
    return { dialect: 'sqlite', location: path === ':memory:' ? path : resolve(path) }
  }
  if (/^postgres(ql)?:\/\//.test(url)) return { dialect: 'postgres', location: url }
  throw new Error(`DATABASE_URL must start with sqlite: or postgres:// (got "${url.split(':')[0]}:…")`)
}

function openSqlite(file: string): Store {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true })
  const sqlite = new BetterSqlite3(file)
  sqlite.pragma('journal_mode = WAL')
  // FULL: a 2xx is answered only after the commit, so the commit must survive a power loss too.
  sqlite.pragma('synchronous = FULL')
  sqlite.pragma('busy_timeout = 5000')
  sqlite.pragma('foreign_keys = ON')
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) })
  return {
    db,
    dialect: 'sqlite',
    sqlite,
    pool: undefined,
    async close() {
      await db.destroy()
    },
  }
}

// pg returns BIGINT as strings by default; our BIGINTs are epoch-ms times, counts and small ids, all
// well inside Number.MAX_SAFE_INTEGER.
const INT8_OID = 20
const NUMERIC_OID = 1700
const pgTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID || oid === NUMERIC_OID) return (value: string) => Number(value)
    return pg.types.getTypeParser(oid, format)
  },
}

async function openPostgres(url: string, options: OpenOptions): Promise<Store> {
  const schema = options.schema
  if (schema && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`invalid schema name "${schema}"`)
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    types: pgTypes,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  })
  if (schema) {
    const client = await pool.connect()
    try {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
    } finally {
      client.release()
    }
  }
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
  return {
    db,
    dialect: 'postgres',
    sqlite: undefined,
    pool,
    async close() {
      await db.destroy()
    },
  }
}

/** Opens the database named by a DATABASE_URL. Does not migrate; call `migrate` for that. */
export async function openStore(url: string, options: OpenOptions = {}): Promise<Store> {
  const { dialect, location } = parseDatabaseUrl(url)
  return dialect === 'sqlite' ? openSqlite(location) : openPostgres(location, options)
}

export interface MigrationReport {
  applied: string[]
}

async function createMigrator(store: Store): Promise<Migrator> {
  // On Postgres, kysely's Migrator looks for its tables in every schema unless told which one: name
  // the connection's own schema, so databases shared by several schemas (or test runs) never mix.
  let migrationTableSchema: string | undefined
  if (store.dialect === 'postgres') {
    const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(store.db)
    migrationTableSchema = rows[0]?.schema ?? 'public'
  }
  return new Migrator({
    db: store.db,
    provider: migrationProvider,
    migrationTableName: 'switchboard_migrations',
    migrationLockTableName: 'switchboard_migrations_lock',
    ...(migrationTableSchema ? { migrationTableSchema } : {}),
  })
}

/** Brings the schema up to date. Safe to run concurrently from several replicas on Postgres. */
export async function migrate(store: Store): Promise<MigrationReport> {
  const migrator = await createMigrator(store)
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw error instanceof Error ? error : new Error(String(error))
  return { applied: (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName) }
}

/** True when every migration has been applied (readiness). */
export async function isMigrated(store: Store): Promise<boolean> {
  const list = await (await createMigrator(store)).getMigrations()
  return list.every((m) => m.executedAt !== undefined)
}

/** A trivial round trip, for /readyz. */
export async function ping(store: Store): Promise<void> {
  await sql`select 1`.execute(store.db)
}
