import { afterEach, expect, it, vi } from 'vitest'
import { sql } from 'kysely'
import { migrate, migrateTo } from '../../src/db/connect.ts'
import { getDelivery } from '../../src/destinations/deliveries.ts'
import { destinationOrderedFlagMigration, destinationPayloadsMigration, destinationPendingCoveringMigration } from '../../src/db/destination-migrations.ts'
import { deliveryId } from '../../src/destinations/sign.ts'
import { describeEachDialect, openTestStore, type TestStore } from '../helpers/db.ts'
import { closedAfterEach, createForwardHarness, destination, makeEvent, WAIT, type ForwardHarness } from './helpers.ts'

vi.setConfig({ testTimeout: 60_000 })

/**
 * A pending delivery row as a version of switchboard writes it (`payload`: the row's own copy of the body); without
 * `ordered` (migration 0013), as the releases before it wrote rows.
 */
function deliveryRow(destination: string, eventId: string, payload: string, at: number) {
  return {
    id: deliveryId(destination, eventId), destination, event_id: eventId, event_type: 'call.completed', conversation_id: null, payload,
    order_at: at * 1000, status: 'pending', attempts: 0, round_attempts: 0, next_attempt_at: at, claimed_by: null,
    claimed_until: null, last_status: null, last_error: null, created_at: at, delivered_at: null,
  }
}

/**
 * Event bodies live once per event in destination_payloads (migration 0009), and no longer in the delivery
 * rows (the second step of narrow rows: the previous release already reads the table).
 */
describeEachDialect('destinations: event bodies kept once per event', (dialect) => {
  let h: ForwardHarness | undefined
  let store: TestStore | undefined
  afterEach(async () => {
    await store?.close()
    store = undefined
  })
  const sink = closedAfterEach(() => {
    const current = h
    h = undefined
    return current
  })

  it('one body per event however many destinations, none in the rows; show reads it', async () => {
    const crm = await sink()
    const warehouse = await sink()
    h = await createForwardHarness(dialect, [destination(crm), destination(warehouse, { name: 'warehouse' })])
    const event = makeEvent()
    await h.ingest([event])
    await vi.waitFor(async () => expect((await h!.status()).map((r) => r.status)).toEqual(['delivered', 'delivered']), WAIT)
    const payloads = await h.rt.store.db.selectFrom('destination_payloads').selectAll().execute()
    expect(payloads.map((p) => [p.event_id, JSON.parse(p.payload)])).toEqual([[event.event_id, event]])
    // What both sinks received is that body, byte for byte.
    expect(crm.requests.map((r) => r.body)).toEqual([payloads[0]!.payload])
    expect(warehouse.requests.map((r) => r.body)).toEqual([payloads[0]!.payload])
    const rows = await h.rt.store.db.selectFrom('destination_deliveries').select(['destination', 'payload']).orderBy('destination').execute()
    expect(rows).toEqual([
      { destination: 'crm', payload: '' },
      { destination: 'warehouse', payload: '' },
    ])
    // Ingesting the same event again writes nothing new.
    await h.ingest([event])
    expect(await h.rt.store.db.selectFrom('destination_payloads').select('event_id').execute()).toHaveLength(1)
    expect((await getDelivery(h.rt, deliveryId('warehouse', event.event_id)))?.payload).toEqual(event)
  })

  it('sends the body from destination_payloads, and the row’s own copy only for a row written before 0009', async () => {
    const s = await sink()
    h = await createForwardHarness(dialect, [destination(s)])
    const now = h.clock.now()
    const row = (eventId: string, payload: string) => deliveryRow('crm', eventId, payload, now)
    // As this release writes it (no copy in the row), and as a release before 0009 wrote it (no table entry).
    await h.rt.store.db.insertInto('destination_payloads').values({ event_id: 'evt_next', payload: '{"from":"table"}', created_at: now }).execute()
    await h.rt.store.db.insertInto('destination_deliveries').values([row('evt_next', ''), row('evt_previous', '{"from":"row"}')]).execute()
    h.worker.wake()
    await vi.waitFor(async () => expect((await h!.status()).map((r) => r.status)).toEqual(['delivered', 'delivered']), WAIT)
    expect(Object.fromEntries(s.requests.map((r) => [r.headers['webhook-id'], r.body]))).toEqual({
      [deliveryId('crm', 'evt_next')]: '{"from":"table"}',
      [deliveryId('crm', 'evt_previous')]: '{"from":"row"}',
    })
  })

  it('a delivery whose body is lost is a failed attempt with a clear error, never an empty POST', async () => {
    const s = await sink()
    h = await createForwardHarness(dialect, [destination(s)])
    await h.rt.store.db.insertInto('destination_deliveries').values(deliveryRow('crm', 'evt_lost', '', h.clock.now())).execute()
    h.worker.wake()
    await vi.waitFor(async () => expect((await h!.status())[0]?.attempts).toBe(1), WAIT)
    const [attempt] = await h.rt.store.db.selectFrom('destination_attempts').selectAll().execute()
    expect(attempt).toMatchObject({ status: null, result: 'retry', error: 'the event body is missing (destination_payloads); not sent' })
    expect(s.requests).toEqual([])
  })

  it('migration 0009 copies the bodies of deliveries written before it, once per event, and can run again', async () => {
    store = await openTestStore(dialect, { migrate: false })
    await migrateTo(store, '0008_follow_up_sweep_indexes')
    const row = deliveryRow
    await store.db
      .insertInto('destination_deliveries')
      .values([row('crm', 'evt_a', '{"a":1}', 1_000), row('warehouse', 'evt_a', '{"a":1}', 1_001), row('crm', 'evt_b', '{"b":"é"}', 2_000)])
      .execute()
    expect((await migrate(store)).applied).toEqual(['0009_destination_payloads', '0010_destination_pending_indexes', '0011_instances', '0012_recipe_fires_fired_index', '0013_destination_ordered_flag', '0014_destination_dead_index', '0015_destination_pending_covering', '0016_call_queue_window', '0017_recipe_runs_process', '0018_recipe_runs_one_running', '0019_revoked_sessions', '0020_calls_conversation', '0021_event_lookups_past_pending', '0022_destination_tallies', '0023_recipe_runs_indexes', '0024_dnc_added_index', '0025_contact_keys'])
    const copied = async () => await store!.db.selectFrom('destination_payloads').selectAll().orderBy('event_id').execute()
    expect(await copied()).toEqual([
      { event_id: 'evt_a', payload: '{"a":1}', created_at: 1_000 },
      { event_id: 'evt_b', payload: '{"b":"é"}', created_at: 2_000 },
    ])
    // A crash half-way on SQLite (no transaction) runs the step again: nothing doubles, nothing fails.
    await destinationPayloadsMigration.up(store.db)
    expect(await copied()).toHaveLength(2)
  })
})

/**
 * Migration 0013: only ordered destinations' pending deliveries are in the ordering index. Rows written before it
 * (and by the previous release during a rolling deploy, which does not name the column) count as ordered, as they
 * were; rows this release writes say what their destination does.
 */
describeEachDialect('destinations: the ordered flag (migration 0013)', (dialect) => {
  let store: TestStore | undefined
  afterEach(async () => {
    await store?.close()
    store = undefined
  })

  it('rows written before it are ordered; it can run again; it can be undone', async () => {
    store = await openTestStore(dialect, { migrate: false })
    await migrateTo(store, '0012_recipe_fires_fired_index')
    await store.db.insertInto('destination_deliveries').values([deliveryRow('crm', 'evt_a', '', 1_000), deliveryRow('crm', 'evt_b', '', 2_000)]).execute()
    expect((await migrateTo(store, '0014_destination_dead_index')).applied).toEqual(['0013_destination_ordered_flag', '0014_destination_dead_index'])
    const flags = async () => (await store!.db.selectFrom('destination_deliveries').select(['event_id', 'ordered']).orderBy('event_id').execute()).map((r) => [r.event_id, Number(r.ordered)])
    expect(await flags()).toEqual([['evt_a', 1], ['evt_b', 1]])
    // As the previous release writes during a deploy: without the column, so its rows stay in order too.
    await store.db.insertInto('destination_deliveries').values(deliveryRow('crm', 'evt_c', '', 3_000)).execute()
    expect(await flags()).toEqual([['evt_a', 1], ['evt_b', 1], ['evt_c', 1]])
    const indexes = async () => (await indexNames(store!)).filter((n) => n.startsWith('destination_deliveries_pending'))
    expect((await indexes()).sort()).toEqual(['destination_deliveries_pending_due', 'destination_deliveries_pending_ordered'])
    // A crash half-way on SQLite (no transaction) runs the step again.
    await destinationOrderedFlagMigration.up(store.db)
    await destinationOrderedFlagMigration.down!(store.db)
    expect((await indexes()).sort()).toEqual(['destination_deliveries_pending_conversation', 'destination_deliveries_pending_due'])
  })
})

/**
 * Migration 0015: the pending index carries `created_at`, so the backlog's depth and oldest delivery are read from
 * it alone (test/destinations/backlog-reads.test.ts checks the reads); it replaces the index the claim used.
 */
describeEachDialect('destinations: the covering pending index (migration 0015)', (dialect) => {
  let store: TestStore | undefined
  afterEach(async () => {
    await store?.close()
    store = undefined
  })

  it('replaces the pending index, keeps every pending row in it, can run again and be undone', async () => {
    store = await openTestStore(dialect, { migrate: false })
    await migrateTo(store, '0014_destination_dead_index')
    await store.db.insertInto('destination_deliveries').values([deliveryRow('crm', 'evt_a', '', 1_000), deliveryRow('crm', 'evt_b', '', 2_000)]).execute()
    expect((await migrateTo(store, '0015_destination_pending_covering')).applied).toEqual(['0015_destination_pending_covering'])
    const indexes = async () => (await indexNames(store!)).filter((n) => n.startsWith('destination_deliveries_pending_due'))
    expect(await indexes()).toEqual(['destination_deliveries_pending_due_created'])
    const pending = () => store!.db.selectFrom('destination_deliveries').select(['event_id', 'created_at']).where('destination', '=', 'crm').where('status', '=', sql.lit('pending')).orderBy('event_id').execute()
    expect((await pending()).map((r) => r.event_id)).toEqual(['evt_a', 'evt_b'])
    // A crash half-way on SQLite (no transaction) runs the step again; down restores the previous index.
    await destinationPendingCoveringMigration.up(store.db)
    await destinationPendingCoveringMigration.down!(store.db)
    expect(await indexes()).toEqual(['destination_deliveries_pending_due'])
    expect((await pending()).map((r) => r.event_id)).toEqual(['evt_a', 'evt_b'])
  })
})

/** The index names of the store's schema (SQLite's catalogue, or Postgres's for the connection's schema). */
async function indexNames(store: TestStore): Promise<string[]> {
  if (store.dialect === 'sqlite') {
    const rows = await sql<{ name: string }>`select name from sqlite_master where type = 'index'`.execute(store.db)
    return rows.rows.map((r) => r.name)
  }
  const rows = await sql<{ name: string }>`select indexname as name from pg_indexes where schemaname = current_schema()`.execute(store.db)
  return rows.rows.map((r) => r.name)
}
