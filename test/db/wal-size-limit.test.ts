import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import { afterEach, expect, it } from 'vitest'
import { openStore, WAL_SIZE_LIMIT_BYTES, type Store } from '../../src/db/connect.ts'
import { startSqliteWriter, type SqliteWriter } from '../../src/webhooks/sqlite-writer.ts'

/**
 * SQLite reuses its log file instead of shrinking it: a log that grew while checkpoints could not keep up (a long read,
 * a full disk, a burst) kept its largest size for good. Every connection that writes cuts it back to
 * WAL_SIZE_LIMIT_BYTES when it starts over.
 */
let dir: string | undefined
let store: Store | undefined
let reader: BetterSqlite3.Database | undefined
let writer: SqliteWriter | undefined
afterEach(async () => {
  reader?.close()
  await writer?.close()
  await store?.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
  dir = store = reader = writer = undefined
})

it('a log grown past the limit while a read held checkpoints back is cut back to it once the log starts over', async () => {
  dir = mkdtempSync(join(tmpdir(), 'sb-wal-limit-'))
  const file = join(dir, 'switchboard.db')
  store = await openStore(`sqlite:${file}`)
  const sqlite = store.sqlite!
  sqlite.exec('CREATE TABLE blobs (id INTEGER PRIMARY KEY, body BLOB)')
  // A reader whose snapshot predates the writes: no checkpoint can copy past it, so the log only grows.
  reader = new BetterSqlite3(file)
  reader.exec('BEGIN')
  reader.prepare('SELECT count(*) FROM blobs').get()
  const insert = sqlite.prepare('INSERT INTO blobs (body) VALUES (zeroblob(?))')
  const mb = 1024 * 1024
  for (let i = 0; i < WAL_SIZE_LIMIT_BYTES / mb + 8; i++) insert.run(mb)
  const grown = statSync(`${file}-wal`).size
  expect(grown).toBeGreaterThan(WAL_SIZE_LIMIT_BYTES)
  // The read ends; a checkpoint copies the whole log; the next write starts the log over and cuts it back.
  reader.exec('COMMIT')
  sqlite.pragma('wal_checkpoint(PASSIVE)')
  sqlite.exec('DELETE FROM blobs')
  expect(statSync(`${file}-wal`).size).toBeLessThanOrEqual(WAL_SIZE_LIMIT_BYTES + 65_536)
  expect(statSync(`${file}-wal`).size).toBeLessThan(grown)
})

it("the receiver's inbox writer cuts the log back the same way", async () => {
  dir = mkdtempSync(join(tmpdir(), 'sb-wal-limit-'))
  const file = join(dir, 'switchboard.db')
  store = await openStore(`sqlite:${file}`)
  writer = startSqliteWriter(file)
  expect(await writer.pragma('journal_size_limit')).toEqual([{ journal_size_limit: WAL_SIZE_LIMIT_BYTES }])
})
