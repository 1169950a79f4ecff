import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/load.ts'
import { shortSql } from '../../src/db/short-sql.ts'
import { createRuntime, type Runtime } from '../../src/runtime.ts'
import { describeEachDialect, openTestStore, type TestStore } from '../helpers/db.ts'
import { captureLogs } from '../helpers/log-capture.ts'

/** A statement that takes SQLite a good while whatever the machine: a million-row recursive count. */
const slowCount = (marker: string) =>
  sql<{ n: number | string }>`with recursive c(x) as (select 1 union all select x + 1 from c where x < ${1_000_000}) select count(*) as n, cast(${marker} as text) as m from c`

describeEachDialect('slow database statements (DB_SLOW_STATEMENT_MS)', (dialect) => {
  const dirs: string[] = []
  const runtimes: Runtime[] = []
  const stores: TestStore[] = []
  afterEach(async () => {
    for (const rt of runtimes.splice(0)) await rt.close()
    for (const store of stores.splice(0)) await store.close()
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  })

  async function runtimeWith(slowMs: string) {
    const dir = mkdtempSync(join(tmpdir(), 'sb-slow-'))
    dirs.push(dir)
    const logs = captureLogs('info')
    // The runtime opens its own store from DATABASE_URL (a test store only lends its URL: its schema, on Postgres).
    const lender = await openTestStore(dialect, { migrate: false })
    stores.push(lender)
    const rt = await createRuntime(loadConfig({ env: { DATA_DIR: dir, DATABASE_URL: lender.url, DB_SLOW_STATEMENT_MS: slowMs } }), { log: logs.log })
    runtimes.push(rt)
    return { rt, logs }
  }

  it('logs a statement over the threshold with its SQL and duration, never its values', async () => {
    const { rt, logs } = await runtimeWith('1')
    expect(Number((await slowCount('value-not-for-logs').execute(rt.store.db)).rows[0]!.n)).toBe(1_000_000)
    await new Promise((r) => setImmediate(r))
    const [line] = logs.find(/^slow database statement$/).filter((l) => String(l.sql).includes('recursive'))
    expect(line).toMatchObject({ level: 40, sql: expect.stringContaining('with recursive c(x)') })
    expect(line!.duration_ms).toBeGreaterThanOrEqual(1)
    expect(JSON.stringify(logs.lines)).not.toContain('value-not-for-logs')
  })

  it('stays quiet under the threshold, and when set to 0', async () => {
    for (const ms of ['3600000', '0']) {
      const { rt, logs } = await runtimeWith(ms)
      await slowCount('m').execute(rt.store.db)
      await new Promise((r) => setImmediate(r))
      expect(logs.find(/slow database statement/)).toEqual([])
    }
  })

})

describe('DB_SLOW_STATEMENT_MS', () => {
  it('refuses a value that is not a whole number of milliseconds', () => {
    expect(() => loadConfig({ env: { DATA_DIR: '/tmp/x', DB_SLOW_STATEMENT_MS: 'fast' } })).toThrow(/DB_SLOW_STATEMENT_MS/)
  })
})

describe('shortSql', () => {
  it('folds placeholder lists and multi-row values, and caps the length', () => {
    expect(shortSql('select * from t where id in (?, ?, ?, ?, ?)')).toBe('select * from t where id in (?, …)')
    expect(shortSql('insert into t (a, b) values ($1, $2), ($3, $4), ($5, $6), ($7, $8)')).toBe('insert into t (a, b) values (?, ?), …')
    expect(shortSql('insert into t (a, b, c) values (?, ?, ?), (?, ?, ?), (?, ?, ?)')).toBe('insert into t (a, b, c) values (?, …), …')
    expect(shortSql('select\n  1')).toBe('select 1')
    const long = shortSql(`select ${'x, '.repeat(600)}1`)
    expect(long).toHaveLength(1_000)
    expect(long.endsWith('…')).toBe(true)
  })
})
