import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { ensureAdminToken } from '../../src/config/admin-token.ts'
import { resolveConfig } from '../../src/config/file.ts'
import { main } from '../../src/cli.ts'
import { SHIPPED_RECIPES_DIR } from '../helpers/recipes.ts'
import { asAnotherUser, childEnv, ROOT } from './processes.ts'

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

it('a DATA_DIR this user may not create: one line naming it, its parent\'s owner and mode and the ways out, exit 2 — from serve, a sandbox command and migrate alike', async () => {
  const parent = tempDir()
  const dataDir = join(parent, 'data')
  // Another user may enter the parent but not write in it; as this user, the same by mode alone.
  chmodSync(parent, asRoot ? 0o755 : 0o555)
  const line = new RegExp(
    `^error: Invalid configuration: DATA_DIR ${escaped(dataDir)} cannot be created: this user ${USER} may not write in ${escaped(parent)} — permission denied; it is owner uid \\d+, mode 0?[0-7]{3}\\. Create the folder as or for this user \\(mkdir, then chown\\), or set DATA_DIR to a folder this user may write\\n$`,
  )
  // serve with WEBHOOK_SECRET (the admin token is made first), a command in sandbox mode (its secret is), and migrate
  // with a provider configured (the database is).
  const served = await run(['serve'], { DATA_DIR: dataDir, WEBHOOK_SECRET: 'whsec_other_user' })
  const listed = await run(['recipes', 'list'], { DATA_DIR: dataDir })
  const migrated = await run(['migrate'], { DATA_DIR: dataDir, VOICE_API_KEY: 'sk_test_other_user', WEBHOOK_SECRET: 'whsec_other_user' })
  for (const ran of [served, listed, migrated]) {
    expect(ran.err).toMatch(line)
    expect(ran).toMatchObject({ code: 2, out: '' })
  }
  // A file where a parent folder should be: said as DATA_DIR too (migrate said `cannot open the database …`, exit 1).
  const file = join(tempDir(), 'not-a-folder')
  writeFileSync(file, '')
  let err = ''
  const code = await main(['migrate'], { env: { DATA_DIR: join(file, 'data'), SWITCHBOARD_CONFIG: 'none', LOG_LEVEL: 'silent' }, stdout: () => {}, stderr: (t) => void (err += t) })
  expect({ code, err }).toEqual({ code: 2, err: `error: Invalid configuration: DATA_DIR ${join(file, 'data')} cannot be created: ${file} is a file, not a folder. Move it aside, or set DATA_DIR to a folder\n` })
}, 60_000)

it('a database in a folder this user may not enter is said to be there and not writable by it, with the owner and mode — not "no database"', async () => {
  const dataDir = tempDir()
  const env = { DATA_DIR: dataDir, WEBHOOK_SECRET: 'whsec_other_user', ADMIN_TOKEN: 'other-user-admin-token-0123456789' }
  expect(await main(['migrate'], { env: { ...env, SWITCHBOARD_CONFIG: 'none', LOG_LEVEL: 'silent' }, stdout: () => {}, stderr: () => {} })).toBe(0)
  // Its maker's 0700, as the service makes it; as this user, a mode that shuts this user out the same way.
  chmodSync(dataDir, asRoot ? 0o700 : 0o000)
  const listed = await run(['events', 'list'], env)
  expect(listed.err).toMatch(
    new RegExp(
      `^error: cannot open the database sqlite:${escaped(join(dataDir, 'switchboard.db'))}: SQLITE_READONLY: ${escaped(dataDir)} is not writable by this process ${USER}: it is owner uid \\d+, mode 0?[0-7]{3} — check the owner and mode of the database, its -wal / -shm and their folder \\(made by a command run as another user, root say\\?\\)\\n$`,
    ),
  )
  expect(listed).toMatchObject({ code: 1, out: '' })
  // serve says the same, and does not start.
  const served = await run(['serve'], env)
  expect(served.err).toMatch(new RegExp(`^error: cannot open the database .*: SQLITE_READONLY: ${escaped(dataDir)} is not writable by this process ${USER}: it is owner uid \\d+, mode`))
  expect(served.code).toBe(1)
}, 60_000)

it('recipes test --csv with a file this user may not read: one line naming it, its owner and mode, exit 2 — not a bare EACCES from the copy', async () => {
  const dir = tempDir()
  const recipes = join(dir, 'recipes')
  mkdirSync(recipes)
  copyFileSync(join(SHIPPED_RECIPES_DIR, 'nightly-batch.ts'), join(recipes, 'nightly-batch.ts'))
  const csv = join(dir, 'leads.csv')
  copyFileSync(join(ROOT, 'data/samples/leads.csv'), csv)
  // The folders open to another user, the file its owner's alone (as this user, no one's).
  chmodSync(dir, 0o755)
  chmodSync(csv, asRoot ? 0o600 : 0o000)
  const tested = await run(['recipes', 'test', 'nightly-batch', '--csv', csv, '--now', '2026-01-15T04:00:00Z'], {
    RECIPES_DIR: recipes,
    RECIPES_TYPECHECK: 'false',
    VOICE_API_KEY: 'sk_test_other_user',
    WEBHOOK_SECRET: 'whsec_other_user',
    DEFAULT_COUNTRY: 'IN',
    RECIPES_TIMEZONE: 'Asia/Kolkata',
  })
  expect(tested.err).toMatch(
    new RegExp(
      `^error: --csv: ${escaped(csv)} cannot be read by this user ${USER} — permission denied; the file is owner uid \\d+, mode 0?[0-7]{3}: give this user read access \\(chmod or chown\\), or copy it where this user may read it\\n$`,
    ),
  )
  expect(tested).toMatchObject({ code: 2, out: '' })

  // In a folder this user may not enter (its maker's 0700; as this user, 000): not "no file at …".
  const shut = tempDir()
  const hidden = join(shut, 'leads.csv')
  copyFileSync(join(ROOT, 'data/samples/leads.csv'), hidden)
  if (!asRoot) chmodSync(shut, 0o000)
  const unseen = await run(['recipes', 'test', 'nightly-batch', '--csv', hidden], { RECIPES_DIR: recipes, RECIPES_TYPECHECK: 'false' })
  expect(unseen.err).toMatch(
    new RegExp(
      `^error: --csv: ${escaped(hidden)} cannot be read by this user ${USER} — permission denied; ${escaped(shut)} is owner uid \\d+, mode 0?[0-7]{3}: give this user access \\(chmod or chown\\), or copy the file where this user may read it\\n$`,
    ),
  )
  expect(unseen).toMatchObject({ code: 2, out: '' })
}, 60_000)
