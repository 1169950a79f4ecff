import { afterEach, expect, it } from 'vitest'
import { insertRows } from '../../src/db/insert-rows.ts'
import { describeEachDialect, openTestStore, type TestStore } from '../helpers/db.ts'

/** The hot inserts' builder (src/db/insert-rows.ts): the same rows, conflicts and RETURNING as kysely's, on both databases. */
describeEachDialect('insertRows', (dialect) => {
  let store: TestStore | undefined
  afterEach(async () => {
    await store?.close()
    store = undefined
  })

  const kv = (key: string, value: string, at = 1) => ({ namespace: 'ns', key, value, updated_at: at })
  const COLUMNS = ['namespace', 'key', 'value', 'updated_at'] as const
  const all = async () => (await store!.db.selectFrom('kv_state').select(['key', 'value', 'updated_at']).orderBy('key').execute()).map((r) => [r.key, r.value, Number(r.updated_at)])

  it('inserts every row with its values bound in order, quotes, non-ASCII and NULL-free text intact', async () => {
    store = await openTestStore(dialect)
    const odd = `it's "quoted", (comma) \\ back; ünïcødé 🎉 ?$1`
    const returned = await insertRows(store.db, dialect, 'kv_state', COLUMNS, [kv('a', odd), kv('b', '{}'), kv('c', '[]')], { returning: ['key'] })
    expect(returned.map((r) => r.key).sort()).toEqual(['a', 'b', 'c'])
    expect(await all()).toEqual([['a', odd, 1], ['b', '{}', 1], ['c', '[]', 1]])
  })

  it('ON CONFLICT DO NOTHING returns only the rows it wrote; DO UPDATE takes the incoming values of the listed columns', async () => {
    store = await openTestStore(dialect)
    await insertRows(store.db, dialect, 'kv_state', COLUMNS, [kv('a', 'first'), kv('b', 'first')])
    const fresh = await insertRows(store.db, dialect, 'kv_state', COLUMNS, [kv('a', 'second', 2), kv('c', 'second', 2)], {
      onConflict: { columns: ['namespace', 'key'] },
      returning: ['key', 'value'],
    })
    expect(fresh).toEqual([{ key: 'c', value: 'second' }])
    // Only `value` is updated: `updated_at` keeps what was stored.
    await insertRows(store.db, dialect, 'kv_state', COLUMNS, [kv('a', 'third', 3), kv('b', 'third', 3)], { onConflict: { columns: ['namespace', 'key'], update: ['value'] } })
    expect(await all()).toEqual([['a', 'third', 1], ['b', 'third', 1], ['c', 'second', 2]])
  })

  it('writes right for each row count and tail in turn (their texts are cached per shape)', async () => {
    store = await openTestStore(dialect)
    for (let i = 0; i < 3; i++) await insertRows(store.db, dialect, 'kv_state', COLUMNS, [kv(`k${i}`, 'v')])
    await insertRows(store.db, dialect, 'kv_state', COLUMNS, [kv('x', 'v'), kv('y', 'v')], { onConflict: { columns: ['namespace', 'key'] } })
    await insertRows(store.db, dialect, 'kv_state', COLUMNS, [kv('x', 'w'), kv('z', 'w')], { onConflict: { columns: ['namespace', 'key'], update: ['value'] }, returning: ['key'] })
    expect(await all()).toEqual([['k0', 'v', 1], ['k1', 'v', 1], ['k2', 'v', 1], ['x', 'w', 1], ['y', 'v', 1], ['z', 'w', 1]])
    expect(await insertRows(store.db, dialect, 'kv_state', COLUMNS, [])).toEqual([])
  })

  it('runs inside a transaction and rolls back with it', async () => {
    store = await openTestStore(dialect)
    await expect(
      store.db.transaction().execute(async (trx) => {
        await insertRows(trx, dialect, 'kv_state', COLUMNS, [kv('t', 'v')])
        throw new Error('roll back')
      }),
    ).rejects.toThrow('roll back')
    expect(await all()).toEqual([])
  })
})
