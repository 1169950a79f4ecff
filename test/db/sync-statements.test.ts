import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { inValues } from '../../src/db/in-values.ts'
import { inImmediateTransaction } from '../../src/db/sqlite-transaction.ts'
import { describeEachDialect, openTestStore, type TestStore } from '../helpers/db.ts'

/**
 * Two helpers of the delivery worker's hot path: `inValues` (an IN list as one parameter) and
 * `inImmediateTransaction` (kysely-compiled statements run synchronously under SQLite's write lock).
 */
describeEachDialect('inValues', (dialect) => {
  let store: TestStore | undefined
  afterEach(async () => {
    await store?.close()
    store = undefined
  })

  it('matches exactly the values given, whatever they contain, and nothing for none', async () => {
    store = await openTestStore(dialect)
    const db = store.db
    await sql`create table in_probe (id text primary key, n integer not null)`.execute(db)
    // Characters an array literal or JSON must escape: quotes, commas, braces, backslashes, spaces, non-ASCII.
    const ids = ['plain', 'it\'s', 'a,b', '{x}', 'back\\slash', 'two words', '"quoted"', 'ünï', 'NULL']
    for (const [n, id] of ids.entries()) await sql`insert into in_probe (id, n) values (${id}, ${n})`.execute(db)
    await sql`insert into in_probe (id, n) values ('left out', 99)`.execute(db)
    const chosen = async (values: string[]) =>
      (await db.selectFrom('in_probe' as never).select(sql<string>`id`.as('id')).where(inValues(dialect, 'id', values)).execute()).map((r) => r.id).sort()
    expect(await chosen(ids)).toEqual([...ids].sort())
    expect(await chosen(['a,b', 'missing'])).toEqual(['a,b'])
    expect(await chosen([])).toEqual([])
    const numbers = await db.selectFrom('in_probe' as never).select(sql<string>`id`.as('id')).where(inValues(dialect, 'n', [0, 2, 99])).execute()
    expect(numbers.map((r) => r.id).sort()).toEqual(['a,b', 'left out', 'plain'])
  })
})

describe('inImmediateTransaction [sqlite]', () => {
  let store: TestStore | undefined
  afterEach(async () => {
    await store?.close()
    store = undefined
  })

  it('commits what its function wrote, or nothing when it throws', async () => {
    store = await openTestStore('sqlite')
    const db = store.db
    await sql`create table tx_probe (id text primary key)`.execute(db)
    const insert = (id: string) => sql`insert into tx_probe (id) values (${id})`.compile(db)
    const changed = await inImmediateTransaction(store, (q) => q.run(insert('a')) + q.run(insert('b')))
    expect(changed).toBe(2)
    await expect(
      inImmediateTransaction(store, (q) => {
        q.run(insert('c'))
        q.run(insert('a'))
      }),
    ).rejects.toThrow(/UNIQUE/)
    const rows = await inImmediateTransaction(store, (q) => q.all(sql<{ id: string }>`select id from tx_probe order by id`.compile(db)))
    expect(rows).toEqual([{ id: 'a' }, { id: 'b' }])
  })

  it('waits for a kysely transaction of the same connection to end instead of running inside it', async () => {
    store = await openTestStore('sqlite')
    const db = store.db
    await sql`create table tx_probe (id text primary key)`.execute(db)
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    const order: string[] = []
    const open = db.transaction().execute(async (trx) => {
      await sql`insert into tx_probe (id) values ('kysely')`.execute(trx)
      await held
      order.push('kysely committed')
    })
    // The kysely transaction holds the connection: this one queues behind it.
    const queued = inImmediateTransaction(store, (q) => {
      order.push('sync ran')
      return q.all(sql<{ id: string }>`select id from tx_probe`.compile(db))
    })
    await new Promise((resolve) => setImmediate(resolve))
    expect(order).toEqual([])
    release()
    await open
    expect(await queued).toEqual([{ id: 'kysely' }])
    expect(order).toEqual(['kysely committed', 'sync ran'])
  })

  it.skipIf(!process.env.DATABASE_URL_TEST)('is for SQLite only', async () => {
    store = await openTestStore('postgres')
    await expect(inImmediateTransaction(store, () => 1)).rejects.toThrow(/SQLite only/)
  })
})
