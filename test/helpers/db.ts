import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import { describe } from 'vitest'
import { migrate, openStore, type Dialect, type Store } from '../../src/db/connect.ts'

/**
 * Storage-touching tests run once per dialect: SQLite always (a real file), Postgres when
 * DATABASE_URL_TEST is set (CI sets it). Each Postgres store gets its own schema, named after the test
 * run and dropped by the global teardown, so runs never collide.
 */
export const DIALECTS: Dialect[] = process.env.DATABASE_URL_TEST ? ['sqlite', 'postgres'] : ['sqlite']

export interface TestStore extends Store {
  /** The DATABASE_URL that reaches this same store (for child processes). */
  url: string
  /** Postgres schema name, if any. */
  schema: string | undefined
}

export async function openTestStore(dialect: Dialect, options: { migrate?: boolean } = {}): Promise<TestStore> {
  let store: Store
  let url: string
  let schema: string | undefined
  let cleanup: () => Promise<void>
  const migrated = options.migrate !== false
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'sb-db-'))
    const file = join(dir, 'test.db')
    url = `sqlite:${file}`
    if (migrated) copyFileSync(await migratedSqliteFile(), file)
    store = await openStore(url)
    cleanup = async () => rmSync(dir, { recursive: true, force: true })
  } else {
    const base = process.env.DATABASE_URL_TEST
    if (!base) throw new Error('DATABASE_URL_TEST is not set')
    schema = runSchemaName()
    // The schema travels in the URL too, so child processes (replica tests) land in the same one.
    url = `${base}${base.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`
    store = await openStore(base, { schema })
    cleanup = async () => {}
    if (migrated) {
      try {
        await sql.raw(cloneSchemaSql(await migratedPostgresSchema(base), schema)).execute(store.db)
      } catch (error) {
        await store.close()
        throw error
      }
    }
  }
  const close = store.close
  return {
    ...store,
    url,
    schema,
    async close() {
      await close()
      await cleanup()
    },
  }
}

/** Named after the test run; global teardown drops the run's schemas once every worker is done. */
const runSchemaName = () => `sb_test_${process.env.SB_TEST_RUN ?? 'adhoc'}_${process.pid}_${randomBytes(4).toString('hex')}`

/*
 * A migrated store is a copy of one migrated once per test process, not a run of every migration: ~190 SQLite
 * and ~170 Postgres stores a suite, whose migrations took 16 s and 73 s of it (0.4 s each on a busy Postgres).
 * The copies are the migrations' own result — the file itself, or every table, constraint, index and row of the
 * template schema under its own name — and the migration tests, which open stores with `migrate: false`, still
 * run every migration step by step.
 */
/** The folder of a test process's migrated SQLite template: `<prefix><run id>-<random>` under the system's tmp. */
const SQLITE_TEMPLATE_PREFIX = 'sb-db-template-'
let sqliteTemplate: Promise<string> | undefined
function migratedSqliteFile(): Promise<string> {
  sqliteTemplate ??= (async () => {
    // Named after the run: the global teardown removes it (a worker the pool ends is not always let run its 'exit').
    const file = join(mkdtempSync(join(tmpdir(), `${SQLITE_TEMPLATE_PREFIX}${process.env.SB_TEST_RUN ?? 'adhoc'}-`)), 'template.db')
    const store = await openStore(`sqlite:${file}`)
    try {
      await migrate(store)
    } finally {
      // Closing the last connection checkpoints the log into the file and removes it: the file is the database.
      await store.close()
    }
    process.once('exit', () => rmSync(join(file, '..'), { recursive: true, force: true }))
    return file
  })()
  return sqliteTemplate
}

let postgresTemplate: Promise<string> | undefined
function migratedPostgresSchema(base: string): Promise<string> {
  postgresTemplate ??= (async () => {
    const schema = runSchemaName()
    const store = await openStore(base, { schema })
    try {
      await migrate(store)
    } finally {
      await store.close()
    }
    return schema
  })()
  return postgresTemplate
}

/**
 * One statement that gives schema `to` the tables of schema `from` (columns with their defaults), then their
 * constraints and indexes under their own names, then their rows (the migrations' bookkeeping), then the functions
 * and triggers (the outbox's counts), after the rows so that copying them fires nothing. Both names are
 * ours ([a-z0-9_]).
 */
function cloneSchemaSql(from: string, to: string): string {
  return `DO $clone$
DECLARE r record;
BEGIN
  FOR r IN SELECT c.relname FROM pg_class c WHERE c.relnamespace = '${from}'::regnamespace AND c.relkind = 'r' ORDER BY c.oid LOOP
    EXECUTE format('CREATE TABLE ${to}.%I (LIKE ${from}.%I INCLUDING DEFAULTS INCLUDING GENERATED)', r.relname, r.relname);
  END LOOP;
  FOR r IN SELECT k.conname, c.relname, pg_get_constraintdef(k.oid) AS def FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
      WHERE k.connamespace = '${from}'::regnamespace AND k.contype IN ('p', 'u', 'c', 'x') ORDER BY k.oid LOOP
    EXECUTE format('ALTER TABLE ${to}.%I ADD CONSTRAINT %I %s', r.relname, r.conname, r.def);
  END LOOP;
  FOR r IN SELECT i.indexdef FROM pg_indexes i WHERE i.schemaname = '${from}'
      AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conname = i.indexname AND k.connamespace = '${from}'::regnamespace) LOOP
    EXECUTE replace(r.indexdef, ' ON ${from}.', ' ON ${to}.');
  END LOOP;
  FOR r IN SELECT c.relname FROM pg_class c WHERE c.relnamespace = '${from}'::regnamespace AND c.relkind = 'r' LOOP
    EXECUTE format('INSERT INTO ${to}.%I SELECT * FROM ${from}.%I', r.relname, r.relname);
  END LOOP;
  FOR r IN SELECT pg_get_functiondef(p.oid) AS def FROM pg_proc p WHERE p.pronamespace = '${from}'::regnamespace LOOP
    EXECUTE replace(r.def, '${from}.', '${to}.');
  END LOOP;
  FOR r IN SELECT pg_get_triggerdef(t.oid) AS def FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
      WHERE c.relnamespace = '${from}'::regnamespace AND NOT t.tgisinternal ORDER BY t.oid LOOP
    EXECUTE replace(r.def, '${from}.', '${to}.');
  END LOOP;
END
$clone$`
}

/** `describe` once per dialect, named with the dialect. */
export function describeEachDialect(name: string, fn: (dialect: Dialect) => void): void {
  for (const dialect of DIALECTS) describe(`${name} [${dialect}]`, () => fn(dialect))
}
