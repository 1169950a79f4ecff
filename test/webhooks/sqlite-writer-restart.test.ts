import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { RESTART_MAX_MS, RESTART_MIN_MS, startSqliteWriter, type SqliteWriter } from '../../src/webhooks/sqlite-writer.ts'
import { createManualClock } from '../../src/utils/clock.ts'

/**
 * The inbox's writer thread opens its own connection. When it cannot (here: the database's folder does not exist), the
 * thread ends before answering; the next one starts only after a pause that doubles, and writes meanwhile fail at once
 * with the reason — not one thread started (and failing alike) for every group commit of a retry storm.
 */
describe('the inbox writer thread: a thread that cannot start', () => {
  let dir: string | undefined
  let writer: SqliteWriter | undefined
  afterEach(async () => {
    await writer?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
    dir = writer = undefined
  })

  it('is started again only after a pause that doubles (at most RESTART_MAX_MS); a thread that answers resets it', async () => {
    dir = mkdtempSync(join(tmpdir(), 'sb-writer-start-'))
    const folder = join(dir, 'not-yet')
    const clock = createManualClock(1_000_000)
    writer = startSqliteWriter(join(folder, 'inbox.db'), { clock })
    const cannotOpen = /directory does not exist/

    await expect(writer.pragma('user_version')).rejects.toThrow(cannotOpen)
    // At once, no thread: the last one's reason, and when the next may start.
    await expect(writer.pragma('user_version')).rejects.toThrow(new RegExp(`could not start \\(.*directory does not exist.*\\); trying again in ${RESTART_MIN_MS} ms`))
    await clock.advance(RESTART_MIN_MS - 1)
    await expect(writer.pragma('user_version')).rejects.toThrow(/trying again in 1 ms/)
    await clock.advance(1)
    await expect(writer.pragma('user_version')).rejects.toThrow(cannotOpen)
    await expect(writer.pragma('user_version')).rejects.toThrow(new RegExp(`trying again in ${2 * RESTART_MIN_MS} ms`))

    // Doubling, up to the cap.
    let pause = 2 * RESTART_MIN_MS
    for (let i = 0; i < 10; i++) {
      await clock.advance(pause)
      await expect(writer.pragma('user_version')).rejects.toThrow(cannotOpen)
      pause = Math.min(RESTART_MAX_MS, pause * 2)
    }
    await expect(writer.pragma('user_version')).rejects.toThrow(new RegExp(`trying again in ${RESTART_MAX_MS} ms`))

    // The folder is back: after the pause the next thread opens the file and answers.
    mkdirSync(folder)
    await expect(writer.pragma('user_version')).rejects.toThrow(/trying again/)
    await clock.advance(RESTART_MAX_MS)
    await expect(writer.pragma('user_version')).resolves.toEqual([{ user_version: 0 }])

    // It answered: should it end now, the next write starts a thread at once (no pause), here one that cannot open again.
    await writer.close()
    rmSync(folder, { recursive: true, force: true })
    await expect(writer.pragma('user_version')).rejects.toThrow(cannotOpen)
    await expect(writer.pragma('user_version')).rejects.toThrow(new RegExp(`trying again in ${RESTART_MIN_MS} ms`))
  })
})
