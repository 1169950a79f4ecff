import pg from 'pg'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { purgeOldDeliveries } from '../../src/destinations/index.ts'
import { replayDelivery } from '../../src/destinations/deliveries.ts'
import { purgeOldEvents, requeueEvent } from '../../src/webhooks/index.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { DEST_SECRET } from '../destinations/helpers.ts'
import { createHarness, makeEvent, type Harness } from '../webhooks/helpers.ts'

/**
 * "Pending work is never purged", also when another replica replays it while the purge runs: on Postgres a statement
 * that waited for a row's lock sees the row as the other transaction left it. A third connection holds the row so that
 * the replay and the purge line up behind it in that order; the test waits for them by asking Postgres who is waiting
 * for a lock, never by sleeping.
 */
describe.skipIf(!process.env.DATABASE_URL_TEST)('[postgres] retention purges against a replay on another replica', () => {
  let h: Harness | undefined
  let rt: TestRuntime | undefined
  let locker: pg.Client | undefined
  afterEach(async () => {
    await locker?.end()
    await h?.close()
    await rt?.close()
    locker = h = rt = undefined
  })

  const holdRow = async (schema: string, table: string, column: string, id: string) => {
    locker = new pg.Client({ connectionString: process.env.DATABASE_URL_TEST, options: `-c search_path=${schema}` })
    await locker.connect()
    await locker.query('begin')
    await locker.query(`select 1 from ${table} where ${column} = $1 for update`, [id])
    return locker
  }
  // Inside a transaction pg_stat_activity answers from the snapshot its first read took: cleared before each look.
  const waitingForLocks = async (client: pg.Client) => {
    await client.query('select pg_stat_clear_snapshot()')
    return Number((await client.query<{ n: string }>(`select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`)).rows[0]!.n)
  }
  const untilWaiting = (client: pg.Client, n: number) => vi.waitFor(async () => expect(await waitingForLocks(client)).toBeGreaterThanOrEqual(n), { timeout: 10_000, interval: 20 })

  it('an old processed event requeued while the purge waits for it stays, pending', async () => {
    h = await createHarness('postgres')
    const old = makeEvent()
    expect((await h.send(old)).status).toBe(204)
    await h.rt.store.db.updateTable('webhook_events').set({ status: 'processed' }).where('event_id', '=', old.event_id).execute()
    await h.clock.advance(31 * 86_400_000)
    const client = await holdRow(h.rt.store.schema!, 'webhook_events', 'event_id', old.event_id)
    const requeued = requeueEvent(h.rt, old.event_id)
    await untilWaiting(client, 1)
    const purging = purgeOldEvents(h.rt)
    await untilWaiting(client, 2)
    await client.query('commit')
    expect(await requeued).toBe(true)
    expect((await purging).events).toBe(0)
    expect(await h.rt.store.db.selectFrom('webhook_events').select('status').where('event_id', '=', old.event_id).executeTakeFirst()).toEqual({ status: 'pending' })
  })

  it('an old dead delivery replayed while the purge runs stays, pending', async () => {
    // A configured destination: a replay of one no longer configured is refused before it touches the row.
    rt = await createTestRuntime({ dialect: 'postgres', env: { DESTINATIONS: JSON.stringify([{ name: 'crm', url: 'https://crm.example.com/hook', secret: DEST_SECRET }]) } })
    const created = rt.clock.now()
    await rt.store.db
      .insertInto('destination_deliveries')
      .values({
        id: 'msg_old', destination: 'crm', event_id: 'evt_old', event_type: 'call.completed', conversation_id: null, payload: '',
        order_at: created * 1000, ordered: 0, status: 'dead', attempts: 5, round_attempts: 5, next_attempt_at: created, claimed_by: null, claimed_until: null,
        last_status: 500, last_error: 'x', created_at: created, delivered_at: null,
      })
      .execute()
    await (rt.clock as unknown as { advance(ms: number): Promise<void> }).advance(31 * 86_400_000)
    const client = await holdRow(rt.store.schema!, 'destination_deliveries', 'id', 'msg_old')
    const replayed = replayDelivery(rt, 'msg_old')
    await untilWaiting(client, 1)
    // The purge either passes the held row by or waits behind the replay for it.
    const purging = purgeOldDeliveries(rt)
    await Promise.race([purging, untilWaiting(client, 2)])
    await client.query('commit')
    await replayed
    expect((await purging).deliveries).toBe(0)
    expect(await rt.store.db.selectFrom('destination_deliveries').select('status').where('id', '=', 'msg_old').executeTakeFirst()).toEqual({ status: 'pending' })
  })
})
