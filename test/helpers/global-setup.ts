import { randomBytes } from 'node:crypto'
import pg from 'pg'

/**
 * Each test run gets an id; its Postgres schemas are named after it and dropped here, once, after every
 * worker has finished. Dropping them as each test ends raced with other workers' migrations: kysely's
 * introspection reads every schema's tables and fails when one disappears mid-query.
 */
export function setup(): void {
  process.env.SB_TEST_RUN ??= randomBytes(3).toString('hex')
}

export async function teardown(): Promise<void> {
  const url = process.env.DATABASE_URL_TEST
  const run = process.env.SB_TEST_RUN
  if (!url || !run) return
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query<{ nspname: string }>(`select nspname from pg_namespace where nspname like $1`, [`sb_test_${run}_%`])
    for (const { nspname } of rows) await client.query(`drop schema if exists "${nspname}" cascade`)
  } finally {
    await client.end()
  }
}
