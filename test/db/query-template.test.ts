import { sql } from 'kysely'
import { afterEach, expect, it } from 'vitest'
import { encodeValues, inParameter } from '../../src/db/in-values.ts'
import { queryTemplate } from '../../src/db/query-template.ts'
import { describeEachDialect, openTestStore, type TestStore } from '../helpers/db.ts'

/** Queries compiled once and bound many times (the delivery worker's claims and outcomes). */
describeEachDialect('queryTemplate', (dialect) => {
  let store: TestStore | undefined
  afterEach(async () => {
    await store?.close()
    store = undefined
  })

  it('binds new values into the statement kysely compiled once: a slot used twice, fixed values kept, an encoded IN list', async () => {
    store = await openTestStore(dialect)
    const db = store.db
    await sql`create table template_probe (id text primary key, n integer not null, tag text)`.execute(db)
    for (const [n, id] of ['a', 'b', 'c', 'd'].entries()) await sql`insert into template_probe (id, n, tag) values (${id}, ${n}, 'x')`.execute(db)
    let builds = 0
    const update = queryTemplate<{ n: number; ids: unknown }>((slot) => {
      builds++
      return db
        .updateTable('template_probe' as never)
        .set({ n: slot('n'), tag: 'fixed' } as never)
        .where(inParameter(dialect, 'id', slot('ids')))
        .where(sql<boolean>`n < ${slot('n')}`)
        .compile()
    })
    await db.executeQuery(update({ n: 10, ids: encodeValues(dialect, ['a', 'c']) }))
    await db.executeQuery(update({ n: 2, ids: encodeValues(dialect, ['b', 'd']) }))
    const rows = await sql<{ id: string; n: number; tag: string }>`select id, n, tag from template_probe order by id`.execute(db)
    // b (n 1 < 2) is updated; d (n 3, not < 2) is not: the slot stands in both places it was used.
    expect(rows.rows.map((r) => [r.id, Number(r.n), r.tag])).toEqual([['a', 10, 'fixed'], ['b', 2, 'fixed'], ['c', 10, 'fixed'], ['d', 3, 'x']])
    expect(builds).toBe(1)
  })

  it('refuses a slot that did not become a parameter (a value encoded before kysely saw it)', async () => {
    store = await openTestStore(dialect)
    const db = store.db
    const template = queryTemplate<{ ids: string[] }>((slot) =>
      // Encoded before kysely saw it (as inValues does on SQLite): the slot is lost in the text, never to be filled.
      sql`select 1 where 'a' in (select value from json_each(${JSON.stringify(slot('ids'))}))`.compile(db),
    )
    expect(() => template({ ids: ['a'] })).toThrow('slot "ids" is not a parameter of the compiled query')
  })
})
