import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { BACKSTOP_CHECKPOINT_PAGES, migrate, openStore, type Store } from '../../src/db/connect.ts'
import { startCheckpointer, type Checkpointer, type CheckpointResult } from '../../src/db/checkpointer.ts'
import { startServer, type RunningServer } from '../../src/server.ts'
import { FIXTURE_RECIPES_DIR } from '../helpers/recipes.ts'

/**
 * A running service's WAL checkpoints run on a thread of their own (src/db/checkpointer.ts); its connections
 * checkpoint only past the backstop. Run inside a commit, a checkpoint held up that commit for the whole copy and
 * two fsyncs.
 */
describe('WAL checkpoint thread [sqlite]', () => {
  let dir: string | undefined
  let store: Store | undefined
  let checkpointer: Checkpointer | undefined
  let server: RunningServer | undefined
  let sqlite: BetterSqlite3.Database | undefined
  afterEach(async () => {
    await checkpointer?.close()
    sqlite?.close()
    await server?.close()
    await store?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
    dir = store = checkpointer = server = sqlite = undefined
  })

  const autocheckpoint = (sqlite: BetterSqlite3.Database) => sqlite.pragma('wal_autocheckpoint', { simple: true }) as number

  /**
   * A database file in WAL mode whose connection checkpoints only past the backstop, as a service's do, and a
   * table of wide rows written `n` at a time in one transaction: about a page of log per row.
   */
  const walFile = () => {
    dir = mkdtempSync(join(tmpdir(), 'sb-ckpt-thread-'))
    const file = join(dir, 'db.sqlite')
    const opened = new BetterSqlite3(file)
    sqlite = opened
    opened.pragma('journal_mode = WAL')
    opened.pragma(`wal_autocheckpoint = ${BACKSTOP_CHECKPOINT_PAGES}`)
    opened.exec('CREATE TABLE wide (id INTEGER PRIMARY KEY, body TEXT)')
    const insert = opened.prepare('INSERT INTO wide (body) VALUES (?)')
    const body = 'x'.repeat(3_000)
    const write = opened.transaction((n: number) => {
      for (let i = 0; i < n; i++) insert.run(body)
    })
    return { file, sqlite: opened, write }
  }

  it('copies the log into the database file, and the next write starts the log over', async () => {
    const { file, sqlite: db, write } = walFile()
    // Only on demand here: no timer fires within the test.
    checkpointer = startCheckpointer(file, { everyMs: 3_600_000 })
    write(1_500)
    const first = await checkpointer.checkpoint()
    expect(first!.frames).toBeGreaterThan(1_000)
    expect(first!.backfilled).toBe(first!.frames)
    // Everything was copied and no reader holds the old log: the next writer starts it from the beginning.
    write(10)
    const second = await checkpointer.checkpoint()
    expect(second!.frames).toBeLessThan(100)
    expect(db.prepare('SELECT count(*) AS n FROM wide').get()).toEqual({ n: 1_510 })
    await checkpointer.close()
    // After close it answers nothing (and never throws).
    expect(await checkpointer.checkpoint()).toBeUndefined()
  })

  it('runs on its own every few milliseconds when told to, reporting each checkpoint that found frames', async () => {
    const { file, write } = walFile()
    write(200)
    const reported = new Promise<CheckpointResult>((resolve) => {
      checkpointer = startCheckpointer(file, { everyMs: 5, onCheckpoint: resolve })
    })
    const result = await reported
    expect(result.frames).toBeGreaterThanOrEqual(200)
    expect(result.ms).toBeGreaterThanOrEqual(0)
  })

  it('a thread that cannot open the file is reported, answers nothing and closes at once', async () => {
    dir = mkdtempSync(join(tmpdir(), 'sb-ckpt-thread-'))
    const errors: string[] = []
    const failed = new Promise<void>((resolve) => {
      checkpointer = startCheckpointer(join(dir!, 'no-such-folder', 'db.sqlite'), {
        everyMs: 3_600_000,
        onError(message) {
          errors.push(message)
          resolve()
        },
      })
    })
    await failed
    expect(errors[0]).toMatch(/checkpoint thread failed: .*open/i)
    expect(await checkpointer!.checkpoint()).toBeUndefined()
    // Not by its 2 s fallback: with the clock stopped, closing resolves all the same.
    vi.useFakeTimers({ toFake: ['setTimeout'] })
    try {
      await checkpointer!.close()
    } finally {
      vi.useRealTimers()
    }
  })

  it('a service on a SQLite file checkpoints on the thread: its connections only past the backstop', async () => {
    dir = mkdtempSync(join(tmpdir(), 'sb-ckpt-serve-'))
    server = await startServer({
      env: { PORT: '0', DATA_DIR: dir, RECIPES_DIR: FIXTURE_RECIPES_DIR, WEBHOOK_SECRET: 'whsec_ckpt_test', LOG_LEVEL: 'silent', RECONCILE_INTERVAL_SECONDS: '0' },
    })
    expect(autocheckpoint(server.rt.store.sqlite!)).toBe(BACKSTOP_CHECKPOINT_PAGES)
    const metrics = await server.rt.metrics.metrics()
    expect(metrics).toContain('switchboard_sqlite_checkpoint_seconds')
    expect(metrics).toContain('switchboard_sqlite_wal_frames')
  })

  it('a store opened outside a service keeps SQLite\'s default', async () => {
    dir = mkdtempSync(join(tmpdir(), 'sb-ckpt-cli-'))
    store = await openStore(`sqlite:${join(dir, 'db.sqlite')}`)
    await migrate(store)
    expect(autocheckpoint(store.sqlite!)).toBe(1_000)
  })
})
