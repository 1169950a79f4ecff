import { withLibpqSslModes } from './postgres-url.ts'
import { closeSync, existsSync, openSync } from 'node:fs'
import { makePrivateDir } from '../utils/private-dir.ts'
import { assertDatabaseFileAccess } from './database-file-access.ts'
import { fileIdentity, replacedFileError, replacedFileProblem, type FileIdentity } from './file-identity.ts'
import { createRequire } from 'node:module'
import { dirname } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import type pg from 'pg'
import { ConfigError } from '../config/load.ts'
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql, type KyselyConfig, type MigrationResultSet } from 'kysely'
import type { Database } from './schema.ts'
import { schemaScopedPostgres } from './schema-introspector.ts'
import { migrationProvider, migrations } from './migrations.ts'
import { withStatementCache } from './statement-cache.ts'
import { storableParameters } from './storable-text.ts'

import { parseDatabaseUrl, type Dialect } from './database-url.ts'

export { parseDatabaseUrl, type Dialect }

export interface Store {
  db: Kysely<Database>
  dialect: Dialect
  /** The better-sqlite3 handle (SQLite only), for the few paths that need synchronous batched writes. */
  sqlite: BetterSqlite3.Database | undefined
  /** The pg pool (Postgres only). */
  pool: pg.Pool | undefined
  /**
   * Listens for connections lost outside a query (Postgres restart, network cut). They are already
   * handled — the pool drops the client and opens a new one when the database answers again — so this
   * is for logs and health only. Returns a function that stops listening.
   */
  onConnectionError(fn: (error: Error) => void): () => void
  /** Postgres: the same database on one connection without statement timeouts, for migrations (closed by the caller). */
  withoutTimeouts?: () => Promise<Store>
  /** SQLite in a file: its path, and which file that was when it was opened (ping checks it still is). */
  sqliteFile?: { path: string; opened: FileIdentity }
  close(): Promise<void>
}

export interface OpenOptions {
  /** Postgres: a schema to create and use (tests give each run its own). */
  schema?: string
  /** Postgres pool size. */
  poolSize?: number
  /** Told of every statement that took `ms` or longer (0: off), with its SQL as compiled: placeholders, no values. */
  slowStatement?: { ms: number; report(sql: string, durationMs: number): void }
  /** Postgres: no statement or query timeout (migrations). */
  noTimeouts?: boolean
}

/** kysely's query log, narrowed to the statements slower than the threshold; undefined (no logging) when off. */
function slowStatementLog(slow: OpenOptions['slowStatement']): KyselyConfig['log'] {
  if (!slow || slow.ms <= 0) return undefined
  return (event) => {
    if (event.level === 'query' && event.queryDurationMillis >= slow.ms) slow.report(event.query.sql, event.queryDurationMillis)
  }
}

/**
 * WAL checkpoints run inside the commit that crosses SQLite's threshold (1,000 pages of log, ~4 MB, by default),
 * on whichever connection makes it: the commit then copies the log into the database file and waits for two
 * fsyncs (30–40 ms for ~1,300 pages on a 2-core VM's disk). A running service checkpoints on a thread of its own
 * instead (src/db/checkpointer.ts), and its connections — the receiver's event loop, the inbox writer
 * (src/webhooks/sqlite-writer.ts), processing — checkpoint only past ~32 MB: a backstop should that thread stop
 * or fall behind. CLI commands and embedders that open a store without `serve` keep SQLite's default.
 */
export const BACKSTOP_CHECKPOINT_PAGES = 8_000

/**
 * The size a SQLite log is cut back to once it starts over (PRAGMA journal_size_limit, on every connection that writes).
 * SQLite reuses its log file rather than shrinking it: a log that grew while checkpoints could not keep up — a disk
 * that filled, a long read holding them back, a burst — kept its largest size on disk for good. A running service's
 * log stays well under this between checkpoints (BACKSTOP_CHECKPOINT_PAGES is ~32 MB), so nothing is cut in the
 * normal course.
 */
export const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024

/** A connection of a service whose checkpoints run on the checkpoint thread (see BACKSTOP_CHECKPOINT_PAGES). No-op on Postgres. */
export function checkpointOnlyAsBackstop(store: Store): void {
  store.sqlite?.pragma(`wal_autocheckpoint = ${BACKSTOP_CHECKPOINT_PAGES}`)
}

function openSqlite(file: string, options: OpenOptions): Store {
  if (file !== ':memory:') {
    makePrivateDir(dirname(file))
    assertDatabaseFileAccess(file)
    // A new database is this user's alone (0600), and so are its -wal and -shm, which SQLite makes with the
    // database's mode: under the usual umask SQLite's own 0644 let any user of the machine read it.
    if (!existsSync(file)) closeSync(openSync(file, 'a', 0o600))
  }
  const store = sqliteStore(new BetterSqlite3(file), options)
  const opened = file === ':memory:' ? undefined : fileIdentity(file)
  return opened ? { ...store, sqliteFile: { path: file, opened } } : store
}

/** The service's settings on an open SQLite connection, as a Store. */
function sqliteStore(sqlite: BetterSqlite3.Database, options: OpenOptions): Store {
  sqlite.pragma('journal_mode = WAL')
  // FULL: a 2xx is answered only after the commit, so the commit must survive a power loss too.
  sqlite.pragma('synchronous = FULL')
  // Lock waits are polled per statement (src/db/busy-wait.ts) instead of by SQLite's busy handler.
  sqlite.pragma('busy_timeout = 0')
  sqlite.pragma('foreign_keys = ON')
  sqlite.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`)
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }), log: slowStatementLog(options.slowStatement) })
  return {
    db,
    dialect: 'sqlite',
    sqlite,
    pool: undefined,
    onConnectionError: () => () => {},
    async close() {
      await db.destroy()
    },
  }
}

// pg returns BIGINT as strings by default; our BIGINTs are epoch-ms times, counts and small ids, all
// well inside Number.MAX_SAFE_INTEGER.
const INT8_OID = 20
const NUMERIC_OID = 1700
function pgTypes(driver: typeof pg) {
  return {
    getTypeParser(oid: number, format?: 'text' | 'binary') {
      if (oid === INT8_OID || oid === NUMERIC_OID) return (value: string) => Number(value)
      return driver.types.getTypeParser(oid, format)
    },
  }
}

/**
 * pg, loaded on first use: a service on SQLite (the default) never needs it, and importing it was ~50 ms of every
 * start — each CLI command's, the service's and its processing thread's. Required (it is CommonJS), not `import()`ed:
 * tsx, which the benchmarks register, rewrites every module that has a dynamic import in it, and on a benchmark's
 * bundle (one 3 MB file) that cost ~140 MB of memory.
 */
let driver: typeof pg | undefined
const loadPg = (): typeof pg => (driver ??= createRequire(import.meta.url)('pg') as typeof pg)

/**
 * Bounds on waiting for Postgres. While the database is unreachable every query fails within these
 * instead of hanging, so the receiver answers 503 + Retry-After well inside the provider's 10 s timeout.
 * A refused or reset connection fails at once; these cover a database that does not answer at all.
 */
export const PG_CONNECT_TIMEOUT_MS = 3_000
/** Server side: a statement stuck behind locks or load is cancelled (the connection stays usable). */
export const PG_STATEMENT_TIMEOUT_MS = 15_000
/** Client side: no answer at all (a silent network) — the connection is then discarded. */
export const PG_QUERY_TIMEOUT_MS = 20_000
/**
 * Server side: a transaction left open with nothing running (its process paused or cut off mid-commit) is rolled back,
 * so the rows it holds — an event another replica's inbox must insert, say — are free again within the provider's
 * retries (its last comes 5 minutes after the first) rather than once TCP gives the connection up (hours).
 */
export const PG_IDLE_IN_TRANSACTION_MS = 60_000

/**
 * Makes a pooled client safe to lose. pg emits 'error' on a client whose connection drops; the pool
 * listens only while the client is idle, so a drop while a query is out (the usual case during a cut)
 * was an unhandled 'error' event that killed the process. The query itself still rejects, and pg marks
 * the client unusable, so the pool discards it on release. After a client-side read timeout pg keeps the
 * connection (the server may answer later); we close it instead, so a silent connection is never reused.
 */
function guardClient(client: pg.PoolClient, report: (error: Error) => void): void {
  client.on('error', report)
  const query = client.query.bind(client) as (...args: unknown[]) => unknown
  const guarded = (...args: unknown[]): unknown => {
    const result = query(...storableArguments(args))
    if (result instanceof Promise) {
      result.catch((error: unknown) => {
        if (error instanceof Error && error.message === 'Query read timeout') client.connection.stream.destroy()
      })
    }
    return result
  }
  client.query = guarded as typeof client.query
}

/**
 * A query's arguments with its string parameters storable (src/db/storable-text.ts): `(text, values)` as kysely sends a
 * statement, or a submittable (a cursor) carrying `values`. Postgres refuses U+0000 in text, failing the statement —
 * a recorded error, a searched term, a CSV's value: whatever text reaches a statement.
 */
function storableArguments(args: unknown[]): unknown[] {
  const [first, second] = args
  if (Array.isArray(second)) {
    const values = storableParameters(second)
    return values === second ? args : [first, values, ...args.slice(2)]
  }
  if (first !== null && typeof first === 'object' && Array.isArray((first as { values?: unknown }).values)) {
    const submittable = first as { values: unknown[] }
    submittable.values = storableParameters(submittable.values)
  }
  return args
}

async function openPostgres(url: string, options: OpenOptions): Promise<Store> {
  const schema = options.schema
  if (schema && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`invalid schema name "${schema}"`)
  const pgDriver = loadPg()
  const pool = new pgDriver.Pool({
    connectionString: withLibpqSslModes(url),
    max: options.poolSize ?? 10,
    types: pgTypes(pgDriver),
    connectionTimeoutMillis: PG_CONNECT_TIMEOUT_MS,
    ...(options.noTimeouts ? {} : { statement_timeout: PG_STATEMENT_TIMEOUT_MS, query_timeout: PG_QUERY_TIMEOUT_MS, idle_in_transaction_session_timeout: PG_IDLE_IN_TRANSACTION_MS }),
    // Idle connections are probed, so a half-open one is noticed and replaced between bursts.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  })
  const listeners = new Set<(error: Error) => void>()
  const report = (error: Error) => {
    for (const fn of listeners) fn(error)
  }
  // An idle client lost: the pool has already removed it, and the client's own listener (below) has
  // reported it. Without a listener here the pool's re-emitted 'error' would crash the process.
  pool.on('error', () => {})
  pool.on('connect', (client) => guardClient(client, report))
  if (schema) {
    const client = await pool.connect()
    try {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
    } finally {
      client.release()
    }
  }
  // Introspection (the Migrator's, /readyz's) reads this connection's schema only: src/db/schema-introspector.ts.
  const db = new Kysely<Database>({ dialect: schemaScopedPostgres(new PostgresDialect({ pool })), log: slowStatementLog(options.slowStatement) })
  return {
    db,
    dialect: 'postgres',
    sqlite: undefined,
    pool,
    onConnectionError(fn) {
      listeners.add(fn)
      return () => listeners.delete(fn)
    },
    ...(options.noTimeouts ? {} : { withoutTimeouts: () => openPostgres(url, { schema, poolSize: 2, noTimeouts: true }) }),
    async close() {
      await db.destroy()
    },
  }
}

/** Opens the database named by a DATABASE_URL. Does not migrate; call `migrate` for that. */
export async function openStore(url: string, options: OpenOptions = {}): Promise<Store> {
  const { dialect, location } = parseDatabaseUrl(url)
  return dialect === 'sqlite' ? openSqlite(location, options) : openPostgres(location, options)
}

/** A migrated, empty in-memory database, serialized once per process: what `openMigratedMemoryStore` copies. */
let migratedImage: Promise<Buffer> | undefined

/**
 * A fresh in-memory SQLite store with every migration applied: a copy of one migrated once in this process
 * (better-sqlite3's serialize), not a run of every migration each time (~30 ms on a quiet machine, more on a busy one).
 * For short-lived runtimes that need an empty database of their own: `recipes test` and testRecipe() open one per run.
 */
export async function openMigratedMemoryStore(): Promise<Store> {
  migratedImage ??= (async () => {
    const template = openSqlite(':memory:', {})
    try {
      await migrate(template)
      return template.sqlite!.serialize()
    } finally {
      await template.close()
    }
  })()
  // A failed template is not kept: the next call tries again.
  const image = await migratedImage.catch((error: unknown) => {
    migratedImage = undefined
    throw error
  })
  return sqliteStore(new BetterSqlite3(image), {})
}

export interface MigrationReport {
  applied: string[]
}

async function createMigrator(store: Store): Promise<Migrator> {
  // On Postgres, kysely's Migrator looks for its tables in every schema unless told which one: name
  // the connection's own schema, so databases shared by several schemas (or test runs) never mix.
  let migrationTableSchema: string | undefined
  if (store.dialect === 'postgres') {
    const { rows } = await sql<{ schema: string | null; path: string }>`select current_schema() as schema, current_setting('search_path') as path`.execute(store.db)
    const schema = rows[0]?.schema
    // No schema of the search_path exists: kysely would create its tables in "public" and the first migration would
    // fail with Postgres's "no schema has been selected to create in".
    if (!schema) {
      const path = rows[0]?.path ?? ''
      const first = path.split(',')[0]?.trim() || 'my_schema'
      throw new ConfigError('DATABASE_URL', `selects the schema ${first} (search_path ${path}), which does not exist in this database: create it first (CREATE SCHEMA ${first};), or leave search_path out of the URL to use public`)
    }
    migrationTableSchema = schema
  }
  return new Migrator({
    db: store.db,
    provider: migrationProvider,
    migrationTableName: 'switchboard_migrations',
    migrationLockTableName: 'switchboard_migrations_lock',
    ...(migrationTableSchema ? { migrationTableSchema } : {}),
  })
}

/**
 * The processing side's SQLite connection (`serve`'s processing thread). Durability: what it writes is derived
 * from the inbox (read model, recipe queues, queued calls, delivery outcomes). In WAL mode
 * `synchronous = NORMAL` survives a killed process; only an OS crash or power loss can drop its last
 * commits, which processing then redoes from the inbox, and a delivery whose outcome is lost is sent again
 * (at least once). The receiver's own connection stays FULL: a 2xx is a promise. Checkpoints: only as a
 * backstop, beside the service's checkpoint thread (BACKSTOP_CHECKPOINT_PAGES). No-op on Postgres.
 */
export function useAsProcessingConnection(store: Store): void {
  store.sqlite?.pragma('synchronous = NORMAL')
  // Statement journals in memory: each multi-row statement inside processing's transactions (a batch's inserts and
  // updates, with foreign keys on) keeps the pages it changes in a statement journal, which SQLite spills to a
  // temporary file past 64 KiB — a tenth of the processing thread's CPU went to those writes in a `pipeline` drain.
  // Only a statement inside an explicit transaction keeps one (alone, its rollback is the transaction's), and those
  // of processing are batch-sized, so the journals stay small; large sorts still spill to disk.
  store.sqlite?.pragma('temp_store = MEMORY')
  checkpointOnlyAsBackstop(store)
}

/**
 * Brings the schema up to date. Safe to run concurrently from several replicas on Postgres. On Postgres it runs on
 * a connection of its own without the pool's statement timeouts: building an index over a large table, or copying
 * one, takes as long as it takes, and cut off at 15 s the migration rolled back and the upgrade could never finish
 * (a replica waiting for another's migration lock was cut off too).
 */
export async function migrate(store: Store): Promise<MigrationReport> {
  if (!store.withoutTimeouts) return migrateOn(store)
  const own = await store.withoutTimeouts()
  try {
    return await migrateOn(own)
  } finally {
    await own.close()
  }
}

/** SQLite: how many times a migration run that lost a race with another process's is tried again. */
const SQLITE_MIGRATION_TRIES = 20

async function migrateOn(store: Store): Promise<MigrationReport> {
  const migrator = await createMigrator(store)
  const applied: string[] = await adoptRenamedMigrations(store)
  for (let attempt = 1; ; attempt++) {
    // Everything this version knows is applied: nothing to run. This is also how a previous version restarts on the
    // schema a newer one has migrated (a rolling deploy, a rollback): kysely refuses to migrate a database holding
    // migrations it does not know ("corrupted migrations"), and the forward-compatible rule exists for this case.
    if ((await migrator.getMigrations()).every((m) => m.executedAt !== undefined)) return { applied }
    try {
      applied.push(...report(await migrator.migrateToLatest()).applied)
      return { applied }
    } catch (error) {
      // On SQLite kysely takes no migration lock: two processes on one file started together (a receiver and a
      // worker after an upgrade) run the same migration, and one of them fails recording it (UNIQUE) or adding a
      // column the other just added. Each migration can run again, so the loser looks again after a moment: the
      // winner has applied them, or it takes the next. Postgres has its lock (an advisory lock): no retry there.
      if (store.dialect !== 'sqlite' || attempt >= SQLITE_MIGRATION_TRIES) throw error
      await new Promise((resolve) => setTimeout(resolve, 25 * attempt))
    }
  }
}

/**
 * Migrations renamed after a release had recorded them, by the name a database may hold. 0.18.0's first commit named
 * 0023 `0023_recipe_runs_running`; the next renamed it, adding a second index: a database migrated in between was
 * refused at every later start (kysely: "previously executed migration 0023_recipe_runs_running is missing"). A name
 * once released is never renamed again: this map is for that one.
 */
const RENAMED_MIGRATIONS: ReadonlyArray<readonly [recorded: string, current: string]> = [['0023_recipe_runs_running', '0023_recipe_runs_indexes']]

/**
 * A database holding a migration under a name it was renamed from: the current migration runs (each is safe to run
 * again over what its earlier form did) and the record takes its name. Returns the current names it recorded.
 */
async function adoptRenamedMigrations(store: Store): Promise<string[]> {
  let recorded: string[]
  try {
    const names = RENAMED_MIGRATIONS.flat()
    recorded = (await sql<{ name: string }>`select name from switchboard_migrations where name in (${sql.join(names)})`.execute(store.db)).rows.map((r) => r.name)
  } catch {
    // No migrations table yet: a new database, nothing recorded under any name.
    return []
  }
  const adopted: string[] = []
  for (const [old, current] of RENAMED_MIGRATIONS) {
    if (!recorded.includes(old) || recorded.includes(current)) continue
    await migrations[current]!.up(store.db as Kysely<unknown>)
    await sql`update switchboard_migrations set name = ${current} where name = ${old}`.execute(store.db)
    adopted.push(current)
  }
  return adopted
}

/** Applies migrations up to and including `name` (tests of a migration over the schema before it). */
export async function migrateTo(store: Store, name: string): Promise<MigrationReport> {
  return report(await (await createMigrator(store)).migrateTo(name))
}

function report({ error, results }: MigrationResultSet): MigrationReport {
  if (error) throw error instanceof Error ? error : new Error(String(error))
  return { applied: (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName) }
}

/** True when every migration has been applied (readiness). */
export async function isMigrated(store: Store): Promise<boolean> {
  const list = await (await createMigrator(store)).getMigrations()
  return list.every((m) => m.executedAt !== undefined)
}

/** The migrations this version has that the database lacks, by name, and how many it has in all. */
export async function pendingMigrations(store: Store): Promise<{ pending: string[]; total: number }> {
  const list = await (await createMigrator(store)).getMigrations()
  return { pending: list.filter((m) => m.executedAt === undefined).map((m) => m.name), total: list.length }
}

/** Whether any of switchboard's migrations ran here: false for a database it never used (nothing created to find out). */
export async function hasAnyMigration(store: Store): Promise<boolean> {
  const list = await (await createMigrator(store)).getMigrations()
  return list.some((m) => m.executedAt !== undefined)
}

/** A trivial round trip, for /readyz; on SQLite, also whether the file is still the one opened (src/db/file-identity.ts). */
export async function ping(store: Store): Promise<void> {
  await sql`select 1`.execute(store.db)
  const problem = store.sqliteFile && replacedFileProblem(store.sqliteFile.path, store.sqliteFile.opened)
  if (problem) throw replacedFileError(problem)
}
