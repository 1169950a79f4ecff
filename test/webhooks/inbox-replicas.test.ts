import { afterEach, describe, expect, it } from 'vitest'
import { openStore, type Store } from '../../src/db/connect.ts'
import { createInbox, pendingRow, type Inbox } from '../../src/webhooks/inbox.ts'
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
})
