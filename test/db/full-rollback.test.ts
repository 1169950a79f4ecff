import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { afterEach, expect, it } from 'vitest'
import { openStore, type Store } from '../../src/db/connect.ts'

/**
 * A write that fails because the disk is full can leave SQLite with its transaction already rolled back; the error the
 * caller sees must be that one (SQLITE_FULL), not kysely's ROLLBACK afterwards failing with "no transaction is active".
 */
let store: Store | undefined
let dir: string | undefined
afterEach(async () => {
  await store?.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
  store = dir = undefined
})

it('a transaction that fails with SQLITE_FULL rejects with SQLITE_FULL, and the connection goes on', async () => {
  dir = mkdtempSync(join(tmpdir(), 'sb-full-rollback-'))
  store = await openStore(`sqlite:${join(dir, 'x.db')}`)
  await sql`create table t (a text)`.execute(store.db)
  // The disk "fills": no page may be added (SQLITE_FULL, as a write that meets ENOSPC).
  store.sqlite!.pragma(`max_page_count = ${Number(store.sqlite!.pragma('page_count', { simple: true }))}`)
  const big = 'x'.repeat(100_000)
  const failure = await store.db
    .transaction()
    .execute(async (tx) => {
      for (let i = 0; i < 50; i++) await sql`insert into t values (${big})`.execute(tx)
    })
    .then(() => undefined, (error: unknown) => error as { code?: string; message: string })
  expect(failure?.code).toBe('SQLITE_FULL')
  expect(store.sqlite!.inTransaction).toBe(false)
  store.sqlite!.pragma('max_page_count = 1073741823')
  await sql`insert into t values ('after')`.execute(store.db)
  expect((await sql<{ n: number }>`select count(*) as n from t`.execute(store.db)).rows[0]!.n).toBe(1)
})
