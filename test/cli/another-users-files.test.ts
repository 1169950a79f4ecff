import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { ensureAdminToken } from '../../src/config/admin-token.ts'
import { resolveConfig } from '../../src/config/file.ts'
import { asAnotherUser, childEnv } from './processes.ts'

/**
 * What a user other than DATA_DIR's owner meets — a command run as root on a service's folder, `sudo -u` the other way
 * round — beyond the sandbox's webhook secret (sandbox-secret-owner.test.ts): each said in one line naming the file or
 * folder, its owner and mode, and the way out, where Node's bare `EACCES: permission denied, …` (exit 1) was all there
 * was.
 */
const asRoot = process.getuid?.() === 0
const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) {
    chmodSync(d, 0o700)
    rmSync(d, { recursive: true, force: true })
  }
})

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sb-other-user-'))
  dirs.push(dir)
  return dir
}

async function run(args: string[], env: Record<string, string>) {
  const spawned = asAnotherUser(args, childEnv({ PORT: '0', ...env }))
  const { code } = await spawned.exited
  return { code, out: spawned.stdout(), err: spawned.stderr() }
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
/** `(nobody, uid 65534)`, or this user's name and uid when the tests do not run as root. */
const USER = '\\([^)]*uid \\d+\\)'

it('an admin token this user may not read, or may not create: serve refuses to start with one line naming it, exit 2', async () => {
  const dataDir = tempDir()
  const file = join(dataDir, 'admin-token')
  // Made as the first start makes it: 0600, its maker's.
  ensureAdminToken(await resolveConfig({ env: { DATA_DIR: dataDir, SWITCHBOARD_CONFIG: 'none' } }))
  chmodSync(dataDir, 0o755)
  if (!asRoot) chmodSync(file, 0o000)
  // WEBHOOK_SECRET set: the sandbox's own secret file, said first when it is not, is not in the way.
  const served = await run(['serve'], { DATA_DIR: dataDir, WEBHOOK_SECRET: 'whsec_other_user' })
  expect(served.err).toMatch(
    new RegExp(
      `^error: Invalid configuration: ADMIN_TOKEN is not set, so switchboard keeps its admin token in ${escaped(file)}, which this user ${USER} may not read — permission denied; the file is owner uid \\d+, mode 0?[0-7]{3}\\. Run switchboard as the user that owns DATA_DIR, give this user read and write access to the file \\(chown or chmod\\), or set ADMIN_TOKEN\\n$`,
    ),
  )
  expect(served.code).toBe(2)
  expect(served.out).not.toMatch(/running at/)

  // No token yet, in a folder this user may not write: the file cannot be made.
  const empty = tempDir()
  chmodSync(empty, 0o555)
  const fresh = await run(['serve'], { DATA_DIR: empty, WEBHOOK_SECRET: 'whsec_other_user' })
  expect(fresh.err).toMatch(
    new RegExp(
      `^error: Invalid configuration: ADMIN_TOKEN is not set, so switchboard keeps its admin token in ${escaped(join(empty, 'admin-token'))}, which this user ${USER} may not create — permission denied; DATA_DIR ${escaped(empty)} is owner uid \\d+, mode 0?555\\. Run switchboard as the user that owns DATA_DIR, give this user write access to DATA_DIR \\(chown or chmod\\), or set ADMIN_TOKEN\\n$`,
    ),
  )
  expect(fresh.code).toBe(2)
}, 60_000)
