import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { freePort } from '../helpers/serve-child.ts'
import { asAnotherUser, childEnv, descendants, isAlive, ROOT, spawnCollecting, type Spawned } from './processes.ts'

/**
 * Two ways `serve` once started half-way: on a database it may only read (made by root, say), where it said ready and
 * refused every webhook; and a stop signal while starting, which it ignored until start-up ended — never, while
 * processing waited out a database.
 */
const dirs: string[] = []
const running: Spawned[] = []
afterEach(async () => {
  for (const s of running.splice(0)) for (const pid of [s.child.pid!, ...descendants(s.child.pid!)]) if (isAlive(pid)) process.kill(pid, 'SIGKILL')
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

const BIN = join(ROOT, 'src/bin.mjs')

/** `node src/bin.mjs …` — as `nobody` when the tests run as root (root writes any file), so file modes bite. */
function switchboard(args: string[], env: Record<string, string>): Spawned {
  return asAnotherUser(args, childEnv(env))
}

it('a database this process may only read stops serve before it starts: exit 1, one line naming it', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-readonly-'))
  dirs.push(dataDir)
  const migrated = spawnCollecting(process.execPath, [BIN, 'migrate'], childEnv({ DATA_DIR: dataDir }))
  expect((await migrated.exited).code).toBe(0)
  chmodSync(dataDir, 0o777)
  // The database and its WAL files readable by everyone, writable by their owner (root, or this user with the mode cut).
  for (const file of ['switchboard.db', 'switchboard.db-wal', 'switchboard.db-shm']) {
    try {
      chmodSync(join(dataDir, file), 0o444)
    } catch {}
  }
  const serve = switchboard(['serve'], { DATA_DIR: dataDir, PORT: String(await freePort()), WEBHOOK_SECRET: 'whsec_readonly', ADMIN_TOKEN: 'readonly-admin-token-0123456789' })
  running.push(serve)
  const exit = await serve.exited
  expect(exit.code).toBe(1)
  expect(serve.stderr()).toMatch(/^error: cannot open the database sqlite:.*switchboard\.db: SQLITE_READONLY: \/tmp\/sb-readonly-\w+\/switchboard\.db is not writable by this process \([^)]*uid \d+\): it is owner uid \d+, mode 0?444 — (run switchboard as its owner \(uid 0\), or give this user the file \(chown, as root\)|the file is this user's, its mode alone is in the way: chmod 600 \/tmp\/sb-readonly-\w+\/switchboard\.db)/m)
  expect(serve.stdout()).not.toMatch(/running at/)
}, 60_000)

it('a stop signal while serve is starting ends it within 5 s when start-up does not finish, exit 0', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-early-stop-'))
  dirs.push(dataDir)
  const recipes = join(dataDir, 'recipes')
  mkdirSync(recipes)
  // Loading takes 9.5 s (within the 10 s load limit): start-up is under way for that long.
  writeFileSync(join(recipes, 'slow.ts'), `import { defineRecipe } from 'switchboard'\nawait new Promise((r) => setTimeout(r, 9500))\nexport default defineRecipe({ description: 'loads slowly', on: ['call.busy'], run: () => ({}) })\n`)
  const port = await freePort()
  const serve = spawnCollecting(process.execPath, [BIN, 'serve'], childEnv({ DATA_DIR: dataDir, PORT: String(port), RECIPES_DIR: recipes, RECIPES_TYPECHECK: 'false' }))
  running.push(serve)
  // The listener opens first (deliveries are accepted and wait), then processing starts.
  await expect.poll(async () => ((await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.json(), () => ({}))) as { processing?: string }).processing, { timeout: 20_000, interval: 100 }).toBe('starting')
  const sent = Date.now()
  process.kill(serve.child.pid!, 'SIGTERM')
  const exit = await serve.exited
  expect(exit.code).toBe(0)
  expect(Date.now() - sent).toBeLessThan(8_000)
  expect(serve.stdout()).toContain('SIGTERM while starting: start-up did not finish within 5 s; stopped')
}, 60_000)
