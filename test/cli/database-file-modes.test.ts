import { chmodSync, chownSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { main } from '../../src/cli.ts'
import { asAnotherUser, childEnv, NOBODY } from './processes.ts'

/**
 * A database file whose mode shuts its own user out — writable but not readable (0222), readable but not writable
 * (0444): said as what it lacks, with the chmod that gives it back, where 0222 was SQLite's bare "unable to open
 * database file" read as a folder it may not create files in, and 0444 a hint to "check the owner and mode".
 */
const asRoot = process.getuid?.() === 0
const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
const USER = '\\([^)]*uid \\d+\\)'

/** A migrated DATA_DIR that is the other user's own (as root: given to nobody), its database in `mode`. */
async function dataDirWithDatabase(mode: number): Promise<{ dataDir: string; file: string; env: Record<string, string> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-db-mode-'))
  dirs.push(dataDir)
  const env = { DATA_DIR: dataDir, WEBHOOK_SECRET: 'whsec_db_mode', ADMIN_TOKEN: 'db-mode-admin-token-0123456789' }
  expect(await main(['migrate'], { env: { ...env, SWITCHBOARD_CONFIG: 'none', LOG_LEVEL: 'silent' }, stdout: () => {}, stderr: () => {} })).toBe(0)
  if (asRoot) for (const name of ['', ...readdirSync(dataDir)]) chownSync(join(dataDir, name), NOBODY, NOBODY)
  const file = join(dataDir, 'switchboard.db')
  chmodSync(file, mode)
  return { dataDir, file, env }
}

for (const [mode, lacks, code] of [[0o222, 'readable', 'SQLITE_CANTOPEN'], [0o444, 'writable', 'SQLITE_READONLY']] as const) {
  it(`a database file in mode ${mode.toString(8)} is said not to be ${lacks} by this user, with the chmod that fixes it — a command and serve alike, exit 1`, async () => {
    const { file, env } = await dataDirWithDatabase(mode)
    const line = new RegExp(
      `^error: cannot open the database sqlite:${escaped(file)}: ${code}: ${escaped(file)} is not ${lacks} by this process ${USER}: it is owner uid \\d+, mode ${mode.toString(8)} — the file is this user's, its mode alone is in the way: chmod 600 ${escaped(file)}\\n$`,
    )
    for (const args of [['events', 'list'], ['serve']]) {
      const spawned = asAnotherUser(args, childEnv({ PORT: '0', ...env }))
      const { code: exit } = await spawned.exited
      expect(spawned.stderr()).toMatch(line)
      expect({ exit, out: spawned.stdout() }).toEqual({ exit: 1, out: '' })
    }
  }, 60_000)
}
