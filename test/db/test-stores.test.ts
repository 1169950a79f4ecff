import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { migrate, type Store } from '../../src/db/connect.ts'
import { describeEachDialect, openTestStore } from '../helpers/db.ts'

/**
 * The test stores are copies of one store migrated per test process (test/helpers/db.ts). A copy must be what the
 * migrations make — every column, default, constraint and index, and the migrations' own bookkeeping — or every
 * other test runs against a schema the service never has. A migration that adds something the copy leaves out (a
 * sequence, a foreign key, a view) fails here first.
 */
async function schemaOf(store: Store & { schema: string | undefined }): Promise<unknown> {
  if (store.dialect === 'sqlite') {
    const objects = await sql<{ type: string; name: string; sql: string | null }>`select type, name, sql from sqlite_master where name not like 'sqlite_%' order by type, name`.execute(store.db)
    return objects.rows
  }
  const schema = store.schema!
  const columns = await sql`select table_name, column_name, ordinal_position, data_type, column_default, is_nullable from information_schema.columns where table_schema = ${schema} order by 1, 3`.execute(store.db)
  const constraints = await sql`select c.relname, k.conname, pg_get_constraintdef(k.oid) as def from pg_constraint k join pg_class c on c.oid = k.conrelid where k.connamespace = ${schema}::regnamespace order by 1, 2`.execute(store.db)
  const indexes = await sql`select tablename, indexname, replace(indexdef, ${schema} || '.', '') as def from pg_indexes where schemaname = ${schema} order by 1, 2`.execute(store.db)
  const others = await sql`select relkind, relname from pg_class where relnamespace = ${schema}::regnamespace and relkind not in ('r', 'i') order by 1, 2`.execute(store.db)
  return { columns: columns.rows, constraints: constraints.rows, indexes: indexes.rows, others: others.rows }
}

describeEachDialect('test stores', (dialect) => {
  describe('a migrated test store', () => {
    it('has exactly the schema the migrations make, and nothing left to migrate', async () => {
      const copy = await openTestStore(dialect)
      const fresh = await openTestStore(dialect, { migrate: false })
      try {
        const applied = (await migrate(fresh)).applied
        expect(applied.length).toBeGreaterThan(10)
        expect(await schemaOf(copy)).toEqual(await schemaOf(fresh))
        expect((await migrate(copy)).applied).toEqual([])
        const names = async (s: Store) => (await sql<{ name: string }>`select name from switchboard_migrations order by name`.execute(s.db)).rows.map((r) => r.name)
        expect(await names(copy)).toEqual(await names(fresh))
      } finally {
        await copy.close()
        await fresh.close()
      }
    })

    it('is a store of its own: what one test writes, the next does not see', async () => {
      const a = await openTestStore(dialect)
      const b = await openTestStore(dialect)
      try {
        await a.db.insertInto('kv_state').values({ namespace: 'test', key: 'k', value: '1', updated_at: 0 }).execute()
        expect(await b.db.selectFrom('kv_state').selectAll().where('namespace', '=', 'test').execute()).toEqual([])
      } finally {
        await a.close()
        await b.close()
      }
    })
  })
})
