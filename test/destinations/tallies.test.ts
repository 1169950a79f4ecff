import { afterEach, describe, expect, it, vi } from 'vitest'
import { sql, type Kysely } from 'kysely'
import { summarizeDestinations } from '../../src/destinations/deliveries.ts'
import { startDestinations } from '../../src/destinations/index.ts'
import { foldTallies, readTallies, TALLY_FOLD_EVERY_MS, type Tally } from '../../src/destinations/tallies.ts'
import { deliveryId } from '../../src/destinations/sign.ts'
import { migrate, migrateTo, openStore, type Store } from '../../src/db/connect.ts'
import type { Database } from '../../src/db/schema.ts'
import { createSeededRandom } from '../../src/utils/random.ts'
import { openTestStore, type TestStore } from '../helpers/db.ts'
import { createHarness, type Harness } from '../webhooks/helpers.ts'
import { DEST_SECRET } from './helpers.ts'

/**
 * Postgres keeps each destination's deliveries counted by status (migration 0022's triggers, src/destinations/tallies.ts):
 * whatever writes the outbox — the service's statements, several connections at once, an operator's SQL, a truncate —
 * the counts read off the tallies must be the outbox's own, before a fold and after it.
 */
const STATUSES = ['pending', 'delivered', 'dead'] as const
type Status = (typeof STATUSES)[number]

const row = (destination: string, n: number, status: Status, createdAt: number) => ({
  id: deliveryId(destination, `evt_${n}`), destination, event_id: `evt_${n}`, event_type: 'call.completed', conversation_id: null, payload: '',
  order_at: createdAt * 1000, status, attempts: 1, round_attempts: 0, next_attempt_at: createdAt, claimed_by: null, claimed_until: null,
  last_status: null, last_error: null, created_at: createdAt, delivered_at: status === 'delivered' ? createdAt + 10 : null,
})

/** The outbox counted the slow way, as the tallies must read. */
async function counted(db: Kysely<Database>): Promise<Map<string, Tally>> {
  const rows = await db.selectFrom('destination_deliveries').select(['destination', 'status', (eb) => eb.fn.countAll<number>().as('n')]).groupBy(['destination', 'status']).execute()
  const out = new Map<string, Tally>()
  for (const r of rows) {
    const t = out.get(r.destination) ?? { pending: 0, delivered: 0, dead: 0 }
    t[r.status as Status] = Number(r.n)
    out.set(r.destination, t)
  }
  return out
}

const nonZero = (tallies: Map<string, Tally>) => new Map([...tallies].filter(([, t]) => t.pending + t.delivered + t.dead > 0))

describe.runIf(process.env.DATABASE_URL_TEST)('destinations: the outbox counted by its triggers [postgres]', () => {
  let h: Harness | undefined
  let store: TestStore | undefined
  let second: Store | undefined
  afterEach(async () => {
    await second?.close()
    await h?.close()
    await store?.close()
    h = store = second = undefined
  })

  it('every kind of write keeps the counts exact, folded or not, with two connections writing at once', async () => {
    h = await createHarness('postgres')
    const { rt } = h
    const db = rt.store.db
    // Another pool on the same schema: statements of two connections interleave, and fold while the other writes.
    second = await openStore(rt.store.url)
    const random = createSeededRandom(7)
    let n = 0
    const writers = [db, second.db]
    for (let step = 0; step < 60; step++) {
      const w = writers[step % 2]!
      const destination = random.next() < 0.5 ? 'crm' : 'warehouse'
      const pick = random.next()
      if (pick < 0.35) {
        const batch = Array.from({ length: 1 + Math.floor(random.next() * 20) }, () => row(destination, n++, STATUSES[Math.floor(random.next() * 3)]!, 1_000 + n))
        await w.insertInto('destination_deliveries').values(batch).onConflict((oc) => oc.column('id').doNothing()).execute()
      } else if (pick < 0.6) {
        // A status moved (delivered, dead, replayed back to pending), a few rows at a time, as the worker and replays do.
        const to = STATUSES[Math.floor(random.next() * 3)]!
        const ids = w.selectFrom('destination_deliveries').select('id').where('destination', '=', destination).orderBy('id').limit(1 + Math.floor(random.next() * 8))
        await w.updateTable('destination_deliveries').set({ status: to }).where('id', 'in', ids).execute()
      } else if (pick < 0.75) {
        // An update that moves no status (a claim): no change recorded, none needed.
        await w.updateTable('destination_deliveries').set({ claimed_until: 5 }).where('destination', '=', destination).execute()
      } else if (pick < 0.85) {
        const ids = w.selectFrom('destination_deliveries').select('id').where('destination', '=', destination).orderBy('created_at').limit(5)
        await w.deleteFrom('destination_deliveries').where('id', 'in', ids).execute()
      } else if (pick < 0.95) {
        await Promise.all([foldTallies(rt), w.insertInto('destination_deliveries').values(row('crm', n++, 'pending', 9_000)).execute()])
      } else {
        // A transaction that rolls back leaves no trace in the counts either.
        await w.transaction().execute(async (trx) => {
          await trx.insertInto('destination_deliveries').values(row(destination, n++, 'dead', 2_000)).execute()
          await trx.updateTable('destination_deliveries').set({ status: 'dead' }).where('destination', '=', destination).execute()
          throw new RollBack()
        }).catch((error: unknown) => {
          if (!(error instanceof RollBack)) throw error
        })
      }
      expect(nonZero(await readTallies(rt))).toEqual(await counted(db))
    }
    await foldTallies(rt)
    const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM destination_tally_changes`.execute(db)
    expect(Number(rows[0]!.n)).toBe(0)
    expect(nonZero(await readTallies(rt))).toEqual(await counted(db))

    // An operator's TRUNCATE empties the counts with the outbox.
    await sql`TRUNCATE destination_deliveries`.execute(db)
    expect(nonZero(await readTallies(rt))).toEqual(new Map())
  })

  it('a backlog of changes (a previous version ran alone and folded none) folds in chunks, every change once', async () => {
    h = await createHarness('postgres')
    const db = h.rt.store.db
    for (let i = 0; i < 25; i++) {
      await db.insertInto('destination_deliveries').values([row('crm', i, 'pending', i), row('erp', 100 + i, i % 2 ? 'dead' : 'delivered', i)]).execute()
      if (i % 3 === 0) await db.updateTable('destination_deliveries').set({ status: 'delivered' }).where('id', '=', deliveryId('crm', `evt_${i}`)).execute()
    }
    const changes = async () => Number((await sql<{ n: string }>`SELECT count(*) AS n FROM destination_tally_changes`.execute(db)).rows[0]!.n)
    const before = await changes()
    expect(before).toBeGreaterThan(40)
    expect(await foldTallies(h.rt, { chunk: 7 })).toBe(before)
    expect(await changes()).toBe(0)
    expect(nonZero(await readTallies(h.rt))).toEqual(await counted(db))
    expect(await foldTallies(h.rt, { chunk: 7 })).toBe(0)
  })

  it('the Destinations summary reads the tallies, and the service folds them every minute', async () => {
    const destinations = ['crm', 'warehouse'].map((name) => ({ name, url: `http://127.0.0.1:9/${name}`, secret: DEST_SECRET, allowHttp: true }))
    h = await createHarness('postgres', { ALLOW_PRIVATE_DESTINATIONS: '1', DESTINATIONS: JSON.stringify(destinations) })
    const { rt, clock } = h
    const now = clock.now()
    await rt.store.db
      .insertInto('destination_deliveries')
      .values([row('crm', 1, 'pending', now - 90_000), row('crm', 2, 'pending', now - 10_000), row('crm', 3, 'dead', now - 50), row('crm', 4, 'delivered', now - 40), row('warehouse', 5, 'delivered', now - 30)])
      .execute()
    const summary = async () => (await summarizeDestinations(rt)).map((d) => [d.name, d.pending, d.delivered, d.dead, d.oldest_pending_at])
    const expected = [
      ['crm', 2, 1, 1, new Date(now - 90_000).toISOString()],
      ['warehouse', 0, 1, 0, null],
    ]
    expect(await summary()).toEqual(expected)

    const changes = async () => Number((await sql<{ n: string }>`SELECT count(*) AS n FROM destination_tally_changes`.execute(rt.store.db)).rows[0]!.n)
    expect(await changes()).toBeGreaterThan(0)
    const stop = startDestinations(rt)
    try {
      await clock.advance(TALLY_FOLD_EVERY_MS)
      await vi.waitFor(async () => expect(await changes()).toBe(0))
    } finally {
      await stop()
    }
    expect(await summary()).toEqual(expected)
  })

  it('the migration counts the deliveries written before it, and its down step removes what it made', async () => {
    store = await openTestStore('postgres', { migrate: false })
    await migrateTo(store, '0021_event_lookups_past_pending')
    await store.db.insertInto('destination_deliveries').values([row('crm', 1, 'pending', 1), row('crm', 2, 'dead', 2), row('crm', 3, 'dead', 3), row('erp', 4, 'delivered', 4)]).execute()
    await migrate(store)
    const { rows } = await sql<{ destination: string; status: string; n: string }>`SELECT destination, status, n FROM destination_tallies ORDER BY destination, status`.execute(store.db)
    expect(rows.map((r) => [r.destination, r.status, Number(r.n)])).toEqual([
      ['crm', 'dead', 2],
      ['crm', 'pending', 1],
      ['erp', 'delivered', 1],
    ])
    await migrateTo(store, '0021_event_lookups_past_pending')
    const left = await sql<{ n: string }>`SELECT (SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relname = 'destination_deliveries' AND c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal)
      + (SELECT count(*) FROM pg_class WHERE relname IN ('destination_tallies', 'destination_tally_changes') AND relnamespace = current_schema()::regnamespace) AS n`.execute(store.db)
    expect(Number(left.rows[0]!.n)).toBe(0)
    // And up again: counted afresh.
    await migrate(store)
    const again = await sql<{ n: string }>`SELECT sum(n) AS n FROM destination_tallies`.execute(store.db)
    expect(Number(again.rows[0]!.n)).toBe(4)
  })
})

class RollBack extends Error {}
