import { chmodSync, copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { asAnotherUser, childEnv, ROOT } from './processes.ts'

/**
 * The files a command's options name besides `recipes test --csv` (another-users-files.test.ts) — `--events` and
 * `migrate --copy-from` — kept by another user: one line naming the file, its owner and mode and the way out, exit 2,
 * where `--events` showed Node's bare `EACCES: permission denied, open '…'` and `--copy-from` a database that would not
 * open, its folder "not writable" (exit 1).
 */
const asRoot = process.getuid?.() === 0
const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

/** A file open to its maker alone (as root, 0600; as this user, 000: shut the same way), in a folder open to all. */
function othersFile(name: string, from: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'sb-option-file-'))
  dirs.push(dir)
  chmodSync(dir, 0o755)
  const file = join(dir, name)
  copyFileSync(from, file)
  chmodSync(file, asRoot ? 0o600 : 0o000)
  return file
}

async function run(args: string[], env: Record<string, string>) {
  const spawned = asAnotherUser(args, childEnv(env))
  const { code } = await spawned.exited
  return { code, out: spawned.stdout(), err: spawned.stderr() }
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
const USER = '\\([^)]*uid \\d+\\)'
const unreadable = (file: string) =>
  `${escaped(file)} cannot be read by this user ${USER} — permission denied; the file is owner uid \\d+, mode 0?[0-7]{3}: give this user read access \\(chmod or chown\\), or copy it where this user may read it`

it('recipes test --events with a file this user may not read: one line naming it, its owner and mode, exit 2', async () => {
  const events = othersFile('no-answer.json', join(ROOT, 'data/samples/no-answer-events.json'))
  const tested = await run(['recipes', 'test', 'no-answer-followup', '--events', events], { RECIPES_TYPECHECK: 'false' })
  expect(tested.err).toMatch(new RegExp(`^error: events file ${unreadable(events)}\\n$`))
  expect(tested).toMatchObject({ code: 2, out: '' })
}, 60_000)

it('migrate --copy-from a SQLite file this user may not read: one line naming it, exit 2, before the target is reached', async () => {
  const source = othersFile('switchboard.db', join(ROOT, 'package.json'))
  // A target nothing listens on: the source is said first, as the option's mistake.
  const migrated = await run(['migrate', '--copy-from', source], { DATABASE_URL: 'postgres://switchboard@127.0.0.1:1/switchboard' })
  expect(migrated.err).toMatch(new RegExp(`^error: --copy-from: ${unreadable(source)}\\n$`))
  expect(migrated).toMatchObject({ code: 2, out: '' })
}, 60_000)
