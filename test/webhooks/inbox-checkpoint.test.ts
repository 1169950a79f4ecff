import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { BACKSTOP_CHECKPOINT_PAGES, migrate, openStore, type Store } from '../../src/db/connect.ts'
import { createInbox, pendingRow, type Inbox } from '../../src/webhooks/inbox.ts'

/**
 * The inbox's writer thread leaves WAL checkpoints to the service's checkpoint thread (src/db/checkpointer.ts):
 * one run inside a group commit held up every provider request waiting on it. It still checkpoints past the
 * backstop, should that thread stop or fall behind.
 */
describe('inbox writer and WAL checkpoints [sqlite]', () => {
  let dir: string | undefined
  let store: Store | undefined
  let inbox: Inbox | undefined
  afterEach(async () => {
    await inbox?.close()
    await store?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
    dir = store = inbox = undefined
  })

  /** Frames in the WAL now (a PASSIVE checkpoint from a connection of its own reports them). */
  const walFrames = (file: string) => {
    const probe = new BetterSqlite3(file)
    try {
      return (probe.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number }>)[0]!.log
    } finally {
      probe.close()
    }
  }

  it('does not checkpoint at SQLite\'s default 1,000 pages, and does past the backstop', async () => {
    dir = mkdtempSync(join(tmpdir(), 'sb-ckpt-'))
    const file = join(dir, 'inbox.db')
    store = await openStore(`sqlite:${file}`)
    await migrate(store)
    inbox = createInbox(store)
    const body = JSON.stringify({ padding: 'x'.repeat(3_000) })
    let n = 0
    const commitEvents = async (count: number) => {
      await Promise.all(
        Array.from({ length: count }, () => {
          const id = `evt_ckpt_${n++}`
          return inbox!.commit(pendingRow({ event_id: id, target: 'formant', event_type: 'call.completed', conversation_id: null, trace_id: null, agent_id: null, body, headers: '{}', source: 'webhook' }, 1_000))
        }),
      )
    }
    // Well past 1,000 pages of log (a 3 KB row and its index entries is about a page).
    await commitEvents(2_000)
    const frames = walFrames(file)
    expect(frames).toBeGreaterThan(1_000)
    expect(frames).toBeLessThan(BACKSTOP_CHECKPOINT_PAGES)
    // The probe's checkpoint emptied the log. Written without a checkpoint, as many events again as the
    // backstop has pages would leave ~1.2 × that many frames; the writer checkpoints past it and starts over.
    await commitEvents(BACKSTOP_CHECKPOINT_PAGES)
    expect(walFrames(file)).toBeLessThan(BACKSTOP_CHECKPOINT_PAGES / 2)
  })
})
