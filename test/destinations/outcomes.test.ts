import { afterEach, describe, expect, it } from 'vitest'
import { recordAttempts, type AttemptRecord, type ClaimedDelivery } from '../../src/destinations/outbox.ts'
import { deliveryId } from '../../src/destinations/sign.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

/**
 * Recorded outcomes on SQLite find a delivery by the rowid its claim read, and check its id as well: a rowid that no
 * longer names that delivery (rows renumbered by a VACUUM an operator ran) marks nothing rather than another row.
 */
describe('recordAttempts [sqlite]: rowids, checked by id', () => {
  let rt: TestRuntime | undefined
  afterEach(async () => {
    await rt?.close()
    rt = undefined
  })

  async function seed(eventIds: string[]): Promise<Map<string, { id: string; rowid: number }>> {
    rt = await createTestRuntime({ dialect: 'sqlite' })
    const at = rt.clock.now()
    await rt.store.db
      .insertInto('destination_deliveries')
      .values(eventIds.map((eventId, i) => ({
        id: deliveryId('crm', eventId), destination: 'crm', event_id: eventId, event_type: 'call.completed', conversation_id: null, payload: '',
        order_at: at * 1000 + i, ordered: 0, status: 'pending', attempts: 0, round_attempts: 0, next_attempt_at: at, claimed_by: 'me',
        claimed_until: at + 60_000, last_status: null, last_error: null, created_at: at, delivered_at: null,
      })))
      .execute()
    const rows = rt.store.sqlite!.prepare('select rowid, id, event_id from destination_deliveries').all() as Array<{ rowid: number; id: string; event_id: string }>
    return new Map(rows.map((r) => [r.event_id, { id: r.id, rowid: r.rowid }]))
  }

  const delivered = (row: ClaimedDelivery): AttemptRecord => ({
    row, result: 'delivered', startedAt: 0, latencyMs: 3, status: 200, error: null, response: null, nextAttemptAt: 0, countsInRound: true,
  })
  const claimed = (id: string, rowid: number): ClaimedDelivery => ({ id, rowid, event_id: 'x', event_type: 'call.completed', order_at: 0, attempts: 0, round_attempts: 0, claimed_until: 0, payload: '{}' })
  const statuses = async () => Object.fromEntries((await rt!.store.db.selectFrom('destination_deliveries').select(['event_id', 'status']).execute()).map((r) => [r.event_id, r.status]))

  it('marks the deliveries its rows name', async () => {
    const rows = await seed(['evt_a', 'evt_b', 'evt_c'])
    await recordAttempts(rt!, 'me', [rows.get('evt_a')!, rows.get('evt_c')!].map((r) => delivered(claimed(r.id, r.rowid))))
    expect(await statuses()).toEqual({ evt_a: 'delivered', evt_b: 'pending', evt_c: 'delivered' })
  })

  it('a rowid that names another delivery marks nothing (its claim lapses; it is sent again)', async () => {
    const rows = await seed(['evt_a', 'evt_b'])
    // evt_a's outcome, with the rowid evt_b now has.
    await recordAttempts(rt!, 'me', [delivered(claimed(rows.get('evt_a')!.id, rows.get('evt_b')!.rowid))])
    expect(await statuses()).toEqual({ evt_a: 'pending', evt_b: 'pending' })
  })
})
