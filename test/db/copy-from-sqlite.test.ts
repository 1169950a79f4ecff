import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { openTestStore, type TestStore } from '../helpers/db.ts'
import { cliEnv, createHarness, makeEvent, runCli, SECRET, type Harness } from '../webhooks/helpers.ts'
import { drainDue } from '../../src/webhooks/processing.ts'
import { copiedTables } from '../../src/db/copy-from-sqlite.ts'
import { checkDatabase } from '../../src/doctor/checks.ts'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startServe, waitForLog } from '../helpers/serve-child.ts'
import { processIdentity } from '../../src/utils/process-identity.ts'

/**
 * Moving a deployment from SQLite to Postgres: the README said "point DATABASE_URL at Postgres", and the service started
 * on the empty database — its do-not-call list, its de-duplication ids and its call ledger left behind in the SQLite
 * file (an opted-out number was called; an event the provider sent again was processed twice: an operator probe).
 * `migrate --copy-from` brings every row across.
 */
describe.skipIf(!process.env.DATABASE_URL_TEST)('migrate --copy-from (SQLite into Postgres)', () => {
  let old: Harness
  let target: TestStore
  let sqliteFile = ''
  const counts = async (db: TestStore['db'] | Harness['rt']['store']['db'], tables: string[]) => {
    const out: Record<string, number> = {}
    for (const table of tables) out[table] = Number((await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)}`.execute(db)).rows[0]!.n)
    return out
  }

  beforeAll(async () => {
    old = await createHarness('sqlite')
    for (let i = 0; i < 3; i++) expect((await old.send(makeEvent({ event_id: `evt_move_${i}`, event_type: 'call.no_answer' }))).status).toBe(204)
    await drainDue(old.rt)
    await old.rt.store.db.insertInto('dnc').values({ phone: '+919876543212', reason: 'opted out', source: 'result', added_at: old.clock.now() }).execute()
    sqliteFile = old.rt.store.url.slice('sqlite:'.length)
    target = await openTestStore('postgres', { migrate: false })
  })
  afterAll(async () => {
    await old?.close()
    await target?.close()
  })

  it('refuses without a Postgres DATABASE_URL, and a file that is not there, as mistakes (exit 2)', async () => {
    const onSqlite = await runCli(['migrate', '--copy-from', sqliteFile], cliEnv(old.rt))
    expect(onSqlite.code).toBe(2)
    expect(onSqlite.err).toContain('--copy-from fills a Postgres database from a SQLite one: set DATABASE_URL to the (empty) Postgres database first')
    const missing = await runCli(['migrate', '--copy-from', `${sqliteFile}.missing`], cliEnv(old.rt, { DATABASE_URL: target.url }))
    expect(missing.code).toBe(2)
    expect(missing.err).toContain(`no SQLite database at ${sqliteFile}.missing`)
  })

  it('refuses a file a running switchboard still writes (what it stored meanwhile would be left behind), saying which', async () => {
    // Registered as `serve` registers itself: this test's own process stands for the running service.
    const identity = processIdentity()
    if (!identity) return
    await old.rt.store.db.insertInto('instances').values({ id: 'live-serve', process: identity, host: 'here', started_at: Date.parse('2026-03-18T10:00:00Z') }).execute()
    try {
      const refused = await runCli(['migrate', '--copy-from', sqliteFile], cliEnv(old.rt, { DATABASE_URL: target.url }))
      expect(refused.code).toBe(2)
      expect(refused.err).toContain(`${sqliteFile} is in use: a switchboard started 2026-03-18T10:00:00.000Z (pid ${process.pid}) still runs on it`)
      // Nothing was copied.
      expect(await counts(target.db, ['webhook_events'])).toEqual({ webhook_events: 0 })
    } finally {
      await old.rt.store.db.deleteFrom('instances').where('id', '=', 'live-serve').execute()
    }
  })

  it('copies every table, row for row, into an empty Postgres database — the do-not-call list and the events\' ids among them', async () => {
    const copied = await runCli(['migrate', '--copy-from', sqliteFile], cliEnv(old.rt, { DATABASE_URL: target.url }))
    expect(copied.err).toBe('')
    expect(copied.code).toBe(0)
    expect(copied.out).toMatch(/^(applied 0001_.*|database is up to date); copying .* into it…\n/)
    expect(copied.out).toMatch(/ {2}webhook_events +3 rows\n/)
    expect(copied.out).toMatch(/ {2}dnc +1 rows\n/)
    expect(copied.out).toMatch(/copied \d+ rows from \d+ tables in [\d.]+ s; start the service with this DATABASE_URL/)
    const tables = copiedTables(old.rt.store)
    expect(tables).toEqual(expect.arrayContaining(['webhook_events', 'dnc', 'conversations', 'calls', 'recipe_event_fires', 'kv_state']))
    expect(tables).not.toContain('instances')
    expect(await counts(target.db, tables)).toEqual(await counts(old.rt.store.db, tables))
    const event = await target.db.selectFrom('webhook_events').selectAll().where('event_id', '=', 'evt_move_1').executeTakeFirstOrThrow()
    const before = await old.rt.store.db.selectFrom('webhook_events').selectAll().where('event_id', '=', 'evt_move_1').executeTakeFirstOrThrow()
    expect({ ...event, agent_id: Number(event.agent_id), received_at: Number(event.received_at), next_attempt_at: Number(event.next_attempt_at), processed_at: Number(event.processed_at) }).toEqual(before)
  })

  it('on Postgres afterwards, the CLI lists the events that were stored on SQLite', async () => {
    const listed = await runCli(['events', 'list', '--json'], cliEnv(old.rt, { DATABASE_URL: target.url }))
    expect(listed.code).toBe(0)
    expect((JSON.parse(listed.out) as Array<{ event_id: string }>).map((e) => e.event_id).sort()).toEqual(['evt_move_0', 'evt_move_1', 'evt_move_2'])
    expect(await target.db.selectFrom('dnc').select('phone').execute()).toEqual([{ phone: '+919876543212' }])
  })

  it('until then, doctor and every start of serve say what the SQLite file in DATA_DIR holds that Postgres has none of', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sb-left-'))
    const empty = await openTestStore('postgres')
    try {
      old.rt.store.sqlite!.exec(`vacuum into '${join(dataDir, 'switchboard.db')}'`)
      const file = join(dataDir, 'switchboard.db')
      const checked = await checkDatabase(empty, 'switchboard', dataDir)
      expect(checked.status).toBe('problem')
      expect(checked.detail).toBe(`${file} holds webhook events and do-not-call numbers that this Postgres database has none of; the service does not read that file (DATABASE_URL is Postgres)`)
      expect(checked.fix).toBe(`copy it into an empty Postgres database: switchboard migrate --copy-from ${file} (README → Running on Postgres), or move the file aside if starting afresh was meant`)
      // Postgres with the same kinds of rows: nothing left behind to speak of.
      expect((await checkDatabase(target, 'switchboard', dataDir)).status).toBe('ok')
      const serve = await startServe({ DATABASE_URL: empty.url, WEBHOOK_SECRET: SECRET }, { dataDir, keepDataDir: true })
      try {
        await waitForLog(serve, /holds webhook events and do-not-call numbers that this Postgres database has none of/)
      } finally {
        await serve.stop()
      }
    } finally {
      await empty.close()
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 60_000)

  it('refuses to copy into a database that already holds data (two histories would mix)', async () => {
    const again = await runCli(['migrate', '--copy-from', sqliteFile], cliEnv(old.rt, { DATABASE_URL: target.url, WEBHOOK_SECRET: SECRET }))
    expect(again.code).toBe(2)
    expect(again.err).toMatch(/the Postgres database already holds data \(in .*dnc.*webhook_events.*\): copy into an empty one/)
  })
})
