import { afterEach, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { isMigrated, migrate, openMigratedMemoryStore, openStore, useAsProcessingConnection } from '../../src/db/connect.ts'
import { migrations } from '../../src/db/migrations.ts'
import { createRuntime } from '../../src/runtime.ts'
import { loadConfig } from '../../src/config/load.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { DIALECTS, describeEachDialect, openTestStore, type TestStore } from '../helpers/db.ts'

describeEachDialect('store', (dialect) => {
  let store: TestStore | undefined
  afterEach(async () => {
    await store?.close()
    store = undefined
  })

  it('migrates, is idempotent, and reports readiness', async () => {
    store = await openTestStore(dialect, { migrate: false })
    expect(await isMigrated(store)).toBe(false)
    expect((await migrate(store)).applied).toEqual(['0001_initial', '0002_webhooks_stats', '0003_event_pipeline', '0004_mail_outbox', '0005_dashboard_indexes', '0006_destinations', '0007_recording_headers', '0008_follow_up_sweep_indexes', '0009_destination_payloads', '0010_destination_pending_indexes', '0011_instances', '0012_recipe_fires_fired_index', '0013_destination_ordered_flag', '0014_destination_dead_index', '0015_destination_pending_covering', '0016_call_queue_window', '0017_recipe_runs_process', '0018_recipe_runs_one_running', '0019_revoked_sessions', '0020_calls_conversation', '0021_event_lookups_past_pending', '0022_destination_tallies', '0023_recipe_runs_indexes', '0024_dnc_added_index', '0025_contact_keys'])
    expect((await migrate(store)).applied).toEqual([])
    expect(await isMigrated(store)).toBe(true)
  })

  it('a previous version starts on the schema a newer one migrated (a rolling deploy, a rollback): nothing to run, no refusal', async () => {
    store = await openTestStore(dialect)
    // What the next version leaves: a migration this one does not know, recorded as applied.
    await sql`insert into switchboard_migrations (name, timestamp) values ('0999_from_the_future', '2026-11-28T00:00:00.000Z')`.execute(store.db)
    expect((await migrate(store)).applied).toEqual([])
    expect(await isMigrated(store)).toBe(true)
  })

  it("a database migrated by 0.18.0's first commit, which named 0023 otherwise, is upgraded: the index it lacked made, the record renamed", async () => {
    store = await openTestStore(dialect)
    // As that commit left it: 0023 recorded as `0023_recipe_runs_running`, its second index not made; 0024 and 0025 came
    // later (0025 is made again over what it left: its columns and indexes are kept if there).
    await sql`delete from switchboard_migrations where name in ('0024_dnc_added_index', '0025_contact_keys')`.execute(store.db)
    await sql`update switchboard_migrations set name = '0023_recipe_runs_running' where name = '0023_recipe_runs_indexes'`.execute(store.db)
    await sql`drop index recipe_runs_event`.execute(store.db)
    await sql`drop index dnc_added`.execute(store.db)
    // It was refused at every start: "corrupted migrations: previously executed migration 0023_recipe_runs_running is missing".
    expect((await migrate(store)).applied).toEqual(['0023_recipe_runs_indexes', '0024_dnc_added_index', '0025_contact_keys'])
    expect(await isMigrated(store)).toBe(true)
    const names = (await sql<{ name: string }>`select name from switchboard_migrations where name like '0023%'`.execute(store.db)).rows.map((r) => r.name)
    expect(names).toEqual(['0023_recipe_runs_indexes'])
    // The index 0023 now makes, there to be used.
    await sql`create index recipe_runs_event on recipe_runs (event_id) where event_id is not null`.execute(store.db).then(
      () => expect.unreachable('recipe_runs_event should exist already'),
      (error: unknown) => expect(String(error)).toMatch(/already exists/),
    )
    expect((await migrate(store)).applied).toEqual([])
  })

  it('a start that migrates an existing database says which migrations it applied; a new database says nothing of them', async () => {
    store = await openTestStore(dialect)
    await sql`delete from switchboard_migrations where name = '0025_contact_keys'`.execute(store.db)
    await sql`drop index calls_customer_key`.execute(store.db)
    const config = loadConfig({ env: { DATA_DIR: mkdtempSync(join(tmpdir(), 'sb-migrated-log-')), WEBHOOK_SECRET: 'whsec_test_secret', LOG_LEVEL: 'info' } })
    const upgrade = captureLogs()
    await (await createRuntime(config, { store, log: upgrade.log })).close()
    expect(upgrade.find(/^database migrated/).map((l) => [l.msg, l.migrations])).toEqual([['database migrated: 0025_contact_keys', ['0025_contact_keys']]])
    const fresh = await openTestStore(dialect, { migrate: false })
    const created = captureLogs()
    try {
      await (await createRuntime(config, { store: fresh, log: created.log })).close()
    } finally {
      await fresh.close()
    }
    expect(created.find(/migrated/)).toEqual([])
    rmSync(config.dataDir, { recursive: true, force: true })
  })

  it('dedupes on a primary key with insert-or-ignore, and returns BIGINT times as numbers', async () => {
    store = await openTestStore(dialect)
    const row = {
      event_id: 'evt_1', target: 'formant', event_type: 'call.completed', conversation_id: null, trace_id: null,
      agent_id: 101, body: '{}', headers: '{}', source: 'webhook', received_at: 1_767_225_600_000, status: 'pending',
      attempts: 0, next_attempt_at: 1_767_225_600_000, claimed_by: null, claimed_until: null, last_error: null, processed_at: null,
    }
    const first = await store.db.insertInto('webhook_events').values(row).onConflict((oc) => oc.column('event_id').doNothing()).executeTakeFirst()
    const second = await store.db.insertInto('webhook_events').values(row).onConflict((oc) => oc.column('event_id').doNothing()).executeTakeFirst()
    expect(Number(first.numInsertedOrUpdatedRows)).toBe(1)
    expect(Number(second.numInsertedOrUpdatedRows)).toBe(0)
    const stored = await store.db.selectFrom('webhook_events').selectAll().executeTakeFirstOrThrow()
    expect(stored.received_at).toBe(1_767_225_600_000)
    expect(stored.agent_id).toBe(101)
    const { n } = await store.db.selectFrom('webhook_events').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
    expect(Number(n)).toBe(1)
  })
})

describe('store [sqlite]: two processes migrating one file at once', () => {
  it('both start: the one that loses the race looks again and finds the migrations applied', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-migrate-race-'))
    const url = `sqlite:${join(dir, 'switchboard.db')}`
    const [a, b] = [await openStore(url), await openStore(url)]
    try {
      // A receiver and a worker restarted together after an upgrade (kysely takes no migration lock on SQLite).
      const reports = await Promise.all([migrate(a), migrate(b)])
      expect(reports.map((r) => r.applied.length).sort((x, y) => x - y)).toEqual([0, Object.keys(migrations).length])
      expect(await isMigrated(a)).toBe(true)
      expect(await isMigrated(b)).toBe(true)
    } finally {
      await a.close()
      await b.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('store [sqlite]: the processing connection', () => {
  it('commits at NORMAL and keeps statement journals in memory; other connections keep FULL and temporary files', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-processing-conn-'))
    const url = `sqlite:${join(dir, 'switchboard.db')}`
    const [receiving, processing] = [await openStore(url), await openStore(url)]
    try {
      useAsProcessingConnection(processing)
      const settings = (s: typeof processing) => ({ synchronous: s.sqlite!.pragma('synchronous', { simple: true }), temp_store: s.sqlite!.pragma('temp_store', { simple: true }) })
      // synchronous: 1 NORMAL, 2 FULL; temp_store: 0 the build's default (files), 2 MEMORY.
      expect(settings(processing)).toEqual({ synchronous: 1, temp_store: 2 })
      expect(settings(receiving)).toEqual({ synchronous: 2, temp_store: 0 })
    } finally {
      await receiving.close()
      await processing.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe.runIf(DIALECTS.includes('postgres'))('store [postgres]: migrations run without the statement timeouts', () => {
  it('on a connection of their own where statement_timeout is off (the pool\'s is 15 s)', async () => {
    const store = await openTestStore('postgres')
    try {
      const setting = async (db: typeof store.db) => (await sql<{ statement_timeout: string }>`show statement_timeout`.execute(db)).rows[0]!.statement_timeout
      expect(await setting(store.db)).toBe('15s')
      const own = await store.withoutTimeouts!()
      try {
        expect(await setting(own.db)).toBe('0')
        // The same database and schema: it sees the migrations the store's pool applied.
        expect(await isMigrated(own)).toBe(true)
      } finally {
        await own.close()
      }
    } finally {
      await store.close()
    }
  })
})

describe.runIf(DIALECTS.includes('postgres'))('store [postgres]: introspection sees its own schema only', () => {
  let ours: TestStore | undefined
  let theirs: TestStore | undefined
  afterEach(async () => {
    await ours?.close()
    await theirs?.close()
    ours = theirs = undefined
  })

  it('migrations and readiness never fail on another schema renaming its tables at the same moment', async () => {
    theirs = await openTestStore('postgres')
    ours = await openTestStore('postgres', { migrate: false })
    const other = theirs
    // Another application (or test run) in the same database renames a table back and forth, at the same
    // moment as each of our reads of the catalog.
    const renameTwice = async () => {
      await sql`ALTER TABLE webhook_events RENAME TO webhook_events_away`.execute(other.db)
      await sql`ALTER TABLE webhook_events_away RENAME TO webhook_events`.execute(other.db)
    }
    let migrating = true
    const migrated = migrate(ours).finally(() => (migrating = false))
    while (migrating) await renameTwice()
    expect((await migrated).applied).toContain('0001_initial')
    for (let i = 0; i < 40; i++) {
      const [ready] = await Promise.all([isMigrated(ours), renameTwice()])
      expect(ready).toBe(true)
    }
  })

  it('lists only its own tables, with their columns, serials and identities', async () => {
    ours = await openTestStore('postgres')
    await sql`create table intro_probe (id serial primary key, ident bigint generated always as identity, label text not null default 'x', note text)`.execute(ours.db)
    const tables = await ours.db.introspection.getTables()
    expect(tables.every((t) => t.schema === ours!.schema)).toBe(true)
    expect(tables.map((t) => t.name)).toContain('webhook_events')
    const probe = tables.find((t) => t.name === 'intro_probe')
    expect(probe?.columns.map((c) => [c.name, c.dataType, c.isAutoIncrementing, c.isNullable, c.hasDefaultValue])).toEqual([
      ['id', 'int4', true, false, true],
      ['ident', 'int8', true, false, false],
      ['label', 'text', false, false, true],
      ['note', 'text', false, true, false],
    ])
  })
})

describe('a migrated in-memory store (recipes test, testRecipe)', () => {
  it('is a fresh copy each time: every migration applied, nothing one copy writes seen by another', async () => {
    const a = await openMigratedMemoryStore()
    const b = await openMigratedMemoryStore()
    try {
      expect(await isMigrated(a)).toBe(true)
      expect(await isMigrated(b)).toBe(true)
      expect(a.sqlite?.memory).toBe(true)
      await a.db.insertInto('kv_state').values({ namespace: 'test', key: 'k', value: '"a"', updated_at: 1 }).execute()
      expect(await a.db.selectFrom('kv_state').select('value').execute()).toEqual([{ value: '"a"' }])
      expect(await b.db.selectFrom('kv_state').select('value').execute()).toEqual([])
      // The service's settings, as on any store it opens.
      expect(a.sqlite?.pragma('foreign_keys', { simple: true })).toBe(1)
    } finally {
      await a.close()
      await b.close()
    }
    const c = await openMigratedMemoryStore()
    try {
      expect(await c.db.selectFrom('kv_state').select('value').execute()).toEqual([])
    } finally {
      await c.close()
    }
  })
})
