import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { ConfigError, loadConfig } from '../../src/config/load.ts'
import { openStore } from '../../src/db/connect.ts'
import { explainOpenError } from '../../src/db/open-error.ts'
import { createRuntime } from '../../src/runtime.ts'
import { createSilentLogger } from '../../src/utils/logger.ts'

/** A runtime on `DATABASE_URL`; the error it fails with, if it does. */
async function openFailure(databaseUrl: string, dataDir: string): Promise<Error | undefined> {
  try {
    const rt = await createRuntime(loadConfig({ env: { DATA_DIR: dataDir, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' } }), { log: createSilentLogger() })
    await rt.close()
    return undefined
  } catch (error) {
    return error as Error
  }
}

describe('a database that cannot be opened at start-up', () => {
  it('Postgres refusing the connection: names the database (password hidden) and what to check', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-open-'))
    try {
      // Port 1 on loopback: nothing listens there, the connection is refused at once.
      const error = await openFailure('postgres://switchboard:s3cret-pw@127.0.0.1:1/app', dir)
      expect(error?.message).toMatch(/^cannot open the database postgres:\/\/\*\*\*@127\.0\.0\.1:1\/app: .*ECONNREFUSED.* — is it running, and is DATABASE_URL right\?$/)
      expect(error?.message).not.toContain('s3cret-pw')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('sslmode as libpq reads it, and a server without TLS named as such: no driver warning, the usual one line', async () => {
    // A server that answers the driver's SSLRequest "N" (no TLS), as a Postgres with ssl = off does.
    const dir = mkdtempSync(join(tmpdir(), 'sb-open-'))
    const plain = createServer((socket) => socket.once('data', () => socket.write('N')))
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve))
    const warnings: string[] = []
    const onWarning = (warning: Error) => warnings.push(warning.message)
    process.on('warning', onWarning)
    try {
      const port = (plain.address() as AddressInfo).port
      // `require` meant "verify-full" to node-postgres, with an 8-line warning at every start and command (a managed
      // database's usual URL then failed on a private CA's certificate, where psql connects): read as psql reads it.
      const error = await openFailure(`postgres://switchboard:s3cret-pw@127.0.0.1:${port}/app?sslmode=require`, dir)
      expect(error?.message).toBe(
        `cannot open the database postgres://***@127.0.0.1:${port}/app?sslmode=…: The server does not support SSL connections — the server speaks no TLS: take sslmode out of DATABASE_URL, or turn ssl on in the server`,
      )
      await new Promise((resolve) => setImmediate(resolve))
      expect(warnings.filter((w) => /SSL modes/.test(w))).toEqual([])
    } finally {
      process.off('warning', onWarning)
      await new Promise((resolve) => plain.close(resolve))
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('a port that accepts and closes at once (a pooler or a container port with the database down): the same line, not a bare "Connection terminated"', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-open-'))
    const closer = createServer((socket) => socket.destroy())
    await new Promise<void>((resolve) => closer.listen(0, '127.0.0.1', resolve))
    try {
      const port = (closer.address() as AddressInfo).port
      const error = await openFailure(`postgres://switchboard:s3cret-pw@127.0.0.1:${port}/app`, dir)
      expect(error?.message).toBe(`cannot open the database postgres://***@127.0.0.1:${port}/app: Connection terminated unexpectedly — is it running, and is DATABASE_URL right?`)
    } finally {
      await new Promise((resolve) => closer.close(resolve))
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('Postgres starting up or shutting down (57P03, 57P01): the same line', () => {
    for (const code of ['57P03', '57P01']) {
      const error = explainOpenError(Object.assign(new Error('the database system is starting up'), { code }), 'postgres://u:pw@db:5432/app') as Error
      expect(error.message).toBe(`cannot open the database postgres://***@db:5432/app: ${code}: the database system is starting up — is it running, and is DATABASE_URL right?`)
    }
  })

  it.runIf(process.env.DATABASE_URL_TEST)('a Postgres search_path naming a schema that does not exist: says to create it, and creates nothing in public', async () => {
    const base = process.env.DATABASE_URL_TEST!
    const schema = `sb_missing_${process.pid}`
    const dir = mkdtempSync(join(tmpdir(), 'sb-open-'))
    try {
      const url = `${base}${base.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`
      const error = await openFailure(url, dir)
      expect(error).toBeInstanceOf(ConfigError)
      expect(error?.message).toBe(`Invalid configuration: DATABASE_URL selects the schema ${schema} (search_path ${schema}), which does not exist in this database: create it first (CREATE SCHEMA ${schema};), or leave search_path out of the URL to use public`)
      const store = await openStore(base)
      try {
        const left = await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = 'public' and table_name like 'switchboard%'`.execute(store.db)
        expect(left.rows).toEqual([])
      } finally {
        await store.close()
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('a SQLite file that cannot be created: names it and what to check', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-open-'))
    try {
      // The database's folder is a file.
      writeFileSync(join(dir, 'not-a-folder'), '')
      const error = await openFailure(`sqlite:${join(dir, 'not-a-folder', 'switchboard.db')}`, dir)
      expect(error?.message).toBe(`cannot open the database sqlite:${join(dir, 'not-a-folder', 'switchboard.db')}: EEXIST: file already exists, mkdir '${join(dir, 'not-a-folder')}' — can this process create and write files in DATA_DIR (or the folder DATABASE_URL names)?`)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('a file that is not a database, or a damaged one: names it and says to restore a backup', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-open-'))
    try {
      const file = join(dir, 'switchboard.db')
      writeFileSync(file, 'this is not a database, just text that happens to be long enough to look like a header'.repeat(100))
      const error = await openFailure(`sqlite:${file}`, dir)
      expect(error?.message).toBe(`cannot open the database sqlite:${file}: file is not a database (SQLITE_NOTADB) — the file is not a SQLite database or is damaged: restore it from a backup (README → Operations), or move it aside to start with an empty one`)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
    const full = Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' })
    expect((explainOpenError(full, 'sqlite:./data/switchboard.db') as Error).message).toBe('cannot open the database sqlite:./data/switchboard.db: database or disk is full (SQLITE_FULL) — the disk is full: free space where DATA_DIR is')
    const io = Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_WRITE' })
    expect((explainOpenError(io, 'sqlite:./data/switchboard.db') as Error).message).toMatch(/disk I\/O error \(SQLITE_IOERR_WRITE\) — the disk could not read or write it/)
  })

  it('other errors pass unchanged; Postgres\'s "database does not exist" and failed logins are explained', () => {
    const syntax = Object.assign(new Error('syntax error at or near "x"'), { code: '42601' })
    expect(explainOpenError(syntax, 'postgres://db/app')).toBe(syntax)
    expect(explainOpenError(new Error('no code'), 'postgres://db/app')).toBeInstanceOf(Error)
    expect((explainOpenError(new Error('no code'), 'postgres://db/app') as Error).message).toBe('no code')
    const missing = Object.assign(new Error('database "nosuch" does not exist'), { code: '3D000' })
    expect((explainOpenError(missing, 'postgres://u:pw@db:5432/nosuch') as Error).message).toBe('cannot open the database postgres://***@db:5432/nosuch: 3D000: database "nosuch" does not exist — is it running, and is DATABASE_URL right?')
    const login = Object.assign(new Error('password authentication failed for user "u"'), { code: '28P01' })
    expect((explainOpenError(login, 'postgres://u:pw@db/app') as Error).message).toContain('28P01: password authentication failed')
  })
})

describe.skipIf(!process.env.DATABASE_URL_TEST)('a Postgres database closed to connections', () => {
  it('is said as such, in the usual one line, and read as unreachable (not a bare "not currently accepting connections")', async () => {
    // template0 is closed to connections in every Postgres (datallowconn false, as ALTER DATABASE … ALLOW_CONNECTIONS
    // false leaves a database). It was a database the test created and closed: CREATE DATABASE copies template1 and
    // flushes it, a fraction of a second alone and 20–30 s with the rest of the suite writing to the same Postgres.
    const url = new URL(process.env.DATABASE_URL_TEST!)
    url.pathname = '/template0'
    const dir = mkdtempSync(join(tmpdir(), 'sb-open-'))
    try {
      const error = await openFailure(url.toString(), dir)
      expect(error?.message).toMatch(/^cannot open the database postgres:\/\/.*\/template0: .*is not currently accepting connections — it is closed to connections \(ALTER DATABASE … ALLOW_CONNECTIONS false/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
