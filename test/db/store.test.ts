import { afterEach, expect, it } from 'vitest'
import { isMigrated, migrate } from '../../src/db/connect.ts'
import { describeEachDialect, openTestStore, type TestStore } from '../helpers/db.ts'

describeEachDialect('store', (dialect) => {
  let store: TestStore | undefined
  afterEach(async () => {
    await store?.close()
    store = undefined
  })

  it('migrates, is idempotent, and reports readiness', async () => {
    store = await openTestStore(dialect, { migrate: false })
    expect(await isMigrated(store)).toBe(false)
    expect((await migrate(store)).applied).toEqual(['0001_initial', '0002_webhooks_stats', '0003_event_pipeline', '0004_mail_outbox', '0005_dashboard_indexes', '0006_destinations', '0007_recording_headers', '0008_follow_up_sweep_indexes'])
    expect((await migrate(store)).applied).toEqual([])
    expect(await isMigrated(store)).toBe(true)
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
