import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { ConfigError, ensureSandboxSecret } from '../../src/config/load.ts'
import { resolveConfig } from '../../src/config/file.ts'
import { main } from '../../src/cli.ts'
import { asAnotherUser as spawnAsAnotherUser, childEnv } from './processes.ts'

/**
 * In sandbox mode with no WEBHOOK_SECRET the service keeps a secret of its own in DATA_DIR/webhook-secret, made 0600 by
 * whoever started it first. A command run as another user (root's data folder, `sudo -u` the other way round) stopped
 * with Node's bare `EACCES: permission denied, open '…/webhook-secret'` (exit 1): now one line naming the file, what is
 * wrong and the three ways out, exit 2 — `serve` refusing to start the same way.
 */
const asRoot = process.getuid?.() === 0
const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) {
    chmodSync(d, 0o700)
    rmSync(d, { recursive: true, force: true })
  }
})

/** A data folder that the service, run by this user in sandbox mode, has made its secret in. */
async function dataDirWithSecret(): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-secret-owner-'))
  dirs.push(dataDir)
  ensureSandboxSecret(await resolveConfig({ env: { DATA_DIR: dataDir, SWITCHBOARD_CONFIG: 'none' } }))
  return dataDir
}

/**
 * `node src/bin.mjs …` as another user: as `nobody` when the tests run as root (root reads any file, so only another
 * user meets the file's mode), else as this user with the file or folder's mode cut to what another user would meet.
 */
async function asAnotherUser(args: string[], dataDir: string) {
  const env = childEnv({ DATA_DIR: dataDir, PORT: '0', ADMIN_TOKEN: 'secret-owner-admin-token-0123456789' })
  const spawned = spawnAsAnotherUser(args, env)
  const { code } = await spawned.exited
  return { code, out: spawned.stdout(), err: spawned.stderr() }
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

it('a secret file this user may not read: one line naming it and the ways out, exit 2 — serve refuses to start', async () => {
  const dataDir = await dataDirWithSecret()
  const file = join(dataDir, 'webhook-secret')
  // Another user may enter the folder (0755) but not read the secret (0600, its maker's); as this user, mode 000.
  chmodSync(dataDir, 0o755)
  if (!asRoot) chmodSync(file, 0o000)
  const line = new RegExp(
    `^error: Invalid configuration: WEBHOOK_SECRET is not set, so sandbox mode keeps a secret of its own in ${escaped(file)}, which this user \\([^)]*uid \\d+\\) may not read — permission denied; the file is owner uid \\d+, mode 0?[0-7]{3}\\. Run switchboard as the user that owns DATA_DIR, give this user read and write access to the file \\(chown or chmod\\), or set WEBHOOK_SECRET\\n$`,
  )
  // Any command that opens the service's runtime (here one that reads what it stored: the database is there).
  expect((await main(['migrate'], { env: { DATA_DIR: dataDir, SWITCHBOARD_CONFIG: 'none', LOG_LEVEL: 'silent' }, stdout: () => {}, stderr: () => {} }))).toBe(0)
  const listed = await asAnotherUser(['events', 'list'], dataDir)
  expect(listed.err).toMatch(line)
  expect(listed).toMatchObject({ code: 2, out: '' })
  const served = await asAnotherUser(['serve'], dataDir)
  expect(served.err).toMatch(line)
  expect(served.code).toBe(2)
  expect(served.out).not.toMatch(/running at/)
}, 60_000)

it('a data folder this user may not write, with no secret in it yet: says so, exit 2', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-secret-owner-'))
  dirs.push(dataDir)
  // Another user may enter and read the folder but not write in it; as this user, the same by mode alone.
  chmodSync(dataDir, 0o555)
  const served = await asAnotherUser(['serve'], dataDir)
  expect(served.err).toMatch(
    new RegExp(
      `^error: Invalid configuration: WEBHOOK_SECRET is not set, so sandbox mode keeps a secret of its own in ${escaped(join(dataDir, 'webhook-secret'))}, which this user \\([^)]*uid \\d+\\) may not create — permission denied; DATA_DIR ${escaped(dataDir)} is owner uid \\d+, mode 0?555\\. Run switchboard as the user that owns DATA_DIR, give this user write access to DATA_DIR \\(chown or chmod\\), or set WEBHOOK_SECRET\\n$`,
    ),
  )
  expect(served.code).toBe(2)
}, 60_000)

it('a folder where the secret file should be: a ConfigError naming it (a real EISDIR, root or not)', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-secret-owner-'))
  dirs.push(dataDir)
  const file = join(dataDir, 'webhook-secret')
  mkdirSync(file)
  const config = await resolveConfig({ env: { DATA_DIR: dataDir, SWITCHBOARD_CONFIG: 'none' } })
  let thrown: unknown
  try {
    ensureSandboxSecret(config)
  } catch (error) {
    thrown = error
  }
  expect(thrown).toBeInstanceOf(ConfigError)
  expect((thrown as Error).message).toBe(
    `Invalid configuration: WEBHOOK_SECRET is not set, so sandbox mode keeps a secret of its own in ${file}, which is a folder, not a file: remove it (a new secret is made in its place) or set WEBHOOK_SECRET`,
  )
})
