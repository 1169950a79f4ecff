import Database from 'better-sqlite3'
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { main } from '../../src/cli.ts'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8)

describe.runIf(process.platform !== 'win32')('what the service writes is its user\'s alone', () => {
  it('a new data folder is 0700 and a new database (with its -wal and -shm) 0600; an existing folder keeps its mode', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'sb-private-'))
    dirs.push(parent)
    const dataDir = join(parent, 'data')
    let err = ''
    const code = await main(['migrate'], { env: { DATA_DIR: dataDir, SWITCHBOARD_CONFIG: 'none', LOG_LEVEL: 'silent' }, stdout: () => {}, stderr: (t) => void (err += t) })
    expect({ code, err }).toEqual({ code: 0, err: '' })
    // Under the usual umask (022) SQLite made the database 0644 and the folder was 0755: transcripts, numbers and the
    // do-not-call list readable by any user of the machine.
    expect(modeOf(dataDir)).toBe('700')
    expect(modeOf(join(dataDir, 'switchboard.db'))).toBe('600')
    // The log and its index, while a connection has them (SQLite removes them when the last one closes).
    const open = new Database(join(dataDir, 'switchboard.db'))
    try {
      open.prepare("INSERT INTO kv_state (namespace, key, value, updated_at) VALUES ('t', 't', '1', 0)").run()
      expect([modeOf(join(dataDir, 'switchboard.db-wal')), modeOf(join(dataDir, 'switchboard.db-shm'))]).toEqual(['600', '600'])
    } finally {
      open.close()
    }
    // A folder the operator made keeps the mode they gave it.
    const own = mkdtempSync(join(tmpdir(), 'sb-private-own-'))
    dirs.push(own)
    chmodSync(own, 0o750)
    const before = modeOf(own)
    expect(await main(['migrate'], { env: { DATA_DIR: own, SWITCHBOARD_CONFIG: 'none', LOG_LEVEL: 'silent' }, stdout: () => {}, stderr: () => {} })).toBe(0)
    expect(before).toBe('750')
    expect(modeOf(own)).toBe(before)
    expect(modeOf(join(own, 'switchboard.db'))).toBe('600')
  })
})
