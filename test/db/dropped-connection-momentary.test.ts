import { sql } from 'kysely'
import { afterEach, expect, it } from 'vitest'
import { isMomentaryError } from '../../src/db/momentary-error.ts'
import { openTestStore, type TestStore } from '../helpers/db.ts'

/**
 * A transaction whose backend is terminated (a failover, pg_terminate_backend) fails its next statement with node-postgres's
 * "Client has encountered a connection error and is not queryable", which has no code: read as a statement's mistake,
 * the destinations' outcomes were given up at once, and every delivery the destination had answered was sent again.
 */
let store: TestStore | undefined
afterEach(async () => {
  await store?.close()
  store = undefined
})

it.skipIf(!process.env.DATABASE_URL_TEST)('the next statement of a transaction whose connection was terminated fails with an error read as momentary', async () => {
  store = await openTestStore('postgres', { migrate: false })
  const db = store.db
  const failure = await db
    .transaction()
    .execute(async (trx) => {
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)
      await sql`select pg_terminate_backend(${rows[0]!.pid})`.execute(db)
      // The client learns of it from the socket; its next statement is then refused without being sent.
      await new Promise((resolve) => setTimeout(resolve, 200))
      await sql`select 1`.execute(trx)
    })
    .then(() => undefined, (error: unknown) => error)
  expect(failure).toBeInstanceOf(Error)
  expect(isMomentaryError(failure)).toBe(true)
})
