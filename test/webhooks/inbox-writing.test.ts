import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { migrate, openStore, type Store } from '../../src/db/connect.ts'
import { createInbox, pendingRow, StorageUnavailableError, type Inbox } from '../../src/webhooks/inbox.ts'

/**
 * The inbox tells when a batch is being written (src/processing-host.ts passes it to the processing thread: a slow
 * commit is deliveries still arriving, and processing stays held back meanwhile). Each start has its end, after the
 * batch's `onCommitted`, whether the commit succeeded or not.
 */
describe('inbox: batches being written [sqlite]', () => {
  let dir: string | undefined
  let store: Store | undefined
  let inbox: Inbox | undefined
  afterEach(async () => {
    await inbox?.close().catch(() => {})
    await store?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
    dir = store = inbox = undefined
  })

  const row = (id: string, body = '{}') => pendingRow({ event_id: id, target: 'formant', event_type: 'call.completed', conversation_id: null, trace_id: null, agent_id: null, body, headers: '{}', source: 'webhook' }, 1_000)

  it('announces each batch\'s write and its end, after the commit is reported, also when the write fails', async () => {
    dir = mkdtempSync(join(tmpdir(), 'sb-writing-'))
    store = await openStore(`sqlite:${join(dir, 'inbox.db')}`)
    await migrate(store)
    inbox = createInbox(store)
    const seen: string[] = []
    inbox.onWriting((on) => seen.push(on ? 'writing' : 'written'))
    inbox.onCommitted((n) => seen.push(`committed ${n}`))
    await Promise.all([inbox.commit(row('evt_w_1')), inbox.commit(row('evt_w_2'))])
    expect(seen).toEqual(['writing', 'committed 2', 'written'])
    // A duplicate only: written, nothing new committed.
    seen.length = 0
    await inbox.commit(row('evt_w_1'))
    expect(seen).toEqual(['writing', 'written'])
    // A full disk: the write fails, and still ends.
    seen.length = 0
    await inbox.sqlitePragma('max_page_count = 1')
    await expect(inbox.commit(row('evt_w_3', JSON.stringify({ padding: 'x'.repeat(50_000) })))).rejects.toBeInstanceOf(StorageUnavailableError)
    expect(seen).toEqual(['writing', 'written'])
  })
})
