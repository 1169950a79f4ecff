import { afterEach, describe, expect, it } from 'vitest'
import pg from 'pg'
import { sql } from 'kysely'
import { openStore, type Store } from '../../src/db/connect.ts'
import { createInbox, INBOX_LOCK_TIMEOUT_MS, pendingRow, StorageUnavailableError, type Inbox } from '../../src/webhooks/inbox.ts'
import { PG_IDLE_IN_TRANSACTION_MS } from '../../src/db/connect.ts'
import { openTestStore, type TestStore } from '../helpers/db.ts'

/**
 * Two replicas' inboxes on one Postgres, committing group batches that share event ids (the provider
 * retries a delivery and the load balancer sends it to the other replica). Each batch arrives in its own
 * order; written as they came, two such transactions deadlocked and Postgres aborted one — every valid
 * event in it was answered 503.
 */
describe.skipIf(!process.env.DATABASE_URL_TEST)('inbox group commits on two replicas [postgres]', () => {
  let store: TestStore | undefined
  let second: Store | undefined
  const inboxes: Inbox[] = []
  afterEach(async () => {
    for (const inbox of inboxes.splice(0)) await inbox.close()
    await second?.close()
    await store?.close()
    store = second = undefined
  })

  it('batches sharing ids in opposite orders commit without a deadlock; each id is stored once', async () => {
    store = await openTestStore('postgres')
    second = await openStore(store.url)
    const a = createInbox(store)
    const b = createInbox(second)
    inboxes.push(a, b)
    const row = (id: string) =>
      pendingRow({ event_id: id, target: 'formant', event_type: 'call.completed', conversation_id: null, trace_id: null, agent_id: null, body: '{}', headers: '{}', source: 'webhook' }, 1_000)
    const failures: string[] = []
    for (let round = 0; round < 5; round++) {
      const ids = Array.from({ length: 400 }, (_, i) => `evt_dl_${round}_${String(i).padStart(3, '0')}`)
      const results = await Promise.allSettled([...ids.map((id) => a.commit(row(id))), ...[...ids].reverse().map((id) => b.commit(row(id)))])
      for (const r of results) if (r.status === 'rejected') failures.push((r.reason as Error).message)
      // Of each id's two copies exactly one is new.
      const fresh = results.filter((r) => r.status === 'fulfilled' && !r.value.duplicate).length
      expect(fresh).toBe(ids.length)
    }
    expect(failures).toEqual([])
    const rows = await store.db.selectFrom('webhook_events').select(['event_id', 'duplicates']).execute()
    expect(rows).toHaveLength(2_000)
    expect(rows.every((r) => Number(r.duplicates) === 1)).toBe(true)
  })
  // A row held by another transaction — another replica's commit of the same id that never finished (its process
  // paused or cut off), or a session left open on a stored event — held every delivery behind it: the batch waited
  // for the lock until the statement timeout (15 s), and every delivery in and after it was answered 503 at 5 s.
  const row = (id: string) =>
    pendingRow({ event_id: id, target: 'formant', event_type: 'call.completed', conversation_id: null, trace_id: null, agent_id: null, body: '{}', headers: '{}', source: 'webhook' }, 1_000)
  for (const [what, hold] of [
    ['another replica\'s unfinished insert of the same id', async (c: pg.Client) => c.query(`insert into webhook_events (event_id, target, event_type, body, headers, source, received_at, status, attempts, next_attempt_at) values ('evt_held', 'formant', 'call.completed', '{}', '{}', 'webhook', 1, 'pending', 0, 1)`)],
    ['a session holding the stored event locked', async (c: pg.Client, inbox: Inbox) => {
      await inbox.commit(row('evt_held'))
      await c.query(`select * from webhook_events where event_id = 'evt_held' for update`)
    }],
  ] as const) {
    it(`${what} holds only that event (503): the others of its batch and after it are stored`, async () => {
      store = await openTestStore('postgres')
      const inbox = createInbox(store)
      inboxes.push(inbox)
      const other = new pg.Client({ connectionString: store.url })
      await other.connect()
      try {
        await other.query('begin')
        await hold(other, inbox)
        const started = performance.now()
        const [held, fresh] = await Promise.allSettled([inbox.commit(row('evt_held')), inbox.commit(row('evt_fresh'))])
        expect(fresh).toEqual({ status: 'fulfilled', value: { duplicate: false } })
        expect(held.status).toBe('rejected')
        expect((held as PromiseRejectedResult).reason).toBeInstanceOf(StorageUnavailableError)
        // One lock timeout for the batch, one for the held event alone: well inside the 5 s deadline.
        expect(performance.now() - started).toBeLessThan(4 * INBOX_LOCK_TIMEOUT_MS)
        expect(await inbox.commit(row('evt_later'))).toEqual({ duplicate: false })
      } finally {
        await other.query('rollback').catch(() => {})
        await other.end()
      }
      expect(await inbox.commit(row('evt_held'))).toMatchObject({ duplicate: expect.any(Boolean) })
    })
  }

  // Rolled back by the server past it, freeing what it held (not waited out here: a minute).
  it('sessions are opened with an idle-in-transaction timeout', async () => {
    store = await openTestStore('postgres')
    const { rows } = await sql<{ idle_in_transaction_session_timeout: string }>`show idle_in_transaction_session_timeout`.execute(store.db)
    expect(rows[0]!.idle_in_transaction_session_timeout).toBe(`${PG_IDLE_IN_TRANSACTION_MS / 60_000}min`)
  })
})
