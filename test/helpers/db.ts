import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { describe } from 'vitest'
import { migrate, openStore, type Dialect, type Store } from '../../src/db/connect.ts'

/**
 * Storage-touching tests run once per dialect: SQLite always (a real file), Postgres when
 * DATABASE_URL_TEST is set (CI sets it). Each Postgres store gets its own schema, named after the test
 * run and dropped by the global teardown, so runs never collide.
 */
export const DIALECTS: Dialect[] = process.env.DATABASE_URL_TEST ? ['sqlite', 'postgres'] : ['sqlite']

export interface TestStore extends Store {
  /** The DATABASE_URL that reaches this same store (for child processes). */
  url: string
  /** Postgres schema name, if any. */
  schema: string | undefined
}

export async function openTestStore(dialect: Dialect, options: { migrate?: boolean } = {}): Promise<TestStore> {
  let store: Store
  let url: string
  let schema: string | undefined
  let cleanup: () => Promise<void>
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'sb-db-'))
    url = `sqlite:${join(dir, 'test.db')}`
    store = await openStore(url)
    cleanup = async () => rmSync(dir, { recursive: true, force: true })
  } else {
    const base = process.env.DATABASE_URL_TEST
    if (!base) throw new Error('DATABASE_URL_TEST is not set')
    // Named after the test run; global teardown drops the run's schemas once every worker is done.
    schema = `sb_test_${process.env.SB_TEST_RUN ?? 'adhoc'}_${process.pid}_${randomBytes(4).toString('hex')}`
    // The schema travels in the URL too, so child processes (replica tests) land in the same one.
    url = `${base}${base.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`
    store = await openStore(base, { schema })
    cleanup = async () => {}
  }
  if (options.migrate !== false) {
    try {
      await migrate(store)
    } catch (error) {
      await store.close()
      await cleanup()
      throw error
    }
  }
  const close = store.close
  return {
    ...store,
    url,
    schema,
    async close() {
      await close()
      await cleanup()
    },
  }
}

/** `describe` once per dialect, named with the dialect. */
export function describeEachDialect(name: string, fn: (dialect: Dialect) => void): void {
  for (const dialect of DIALECTS) describe(`${name} [${dialect}]`, () => fn(dialect))
}
