import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { asAnotherUser, childEnv, ROOT } from './processes.ts'

/**
 * DATA_DIR's own subfolders — recordings/, outbox/, inbox/ and those a batch recipe makes in it — made by another user
 * (a command run as root, the service's user the other way round): each said in one line naming the folder in the way,
 * its owner and mode and the way out, where Node's bare `EACCES: permission denied, …` was all there was.
 */
const asRoot = process.getuid?.() === 0
const dirs: string[] = []
const shut: string[] = []
afterEach(() => {
  for (const d of shut.splice(0)) chmodSync(d, 0o700)
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

/** DATA_DIR open to the other user, with `subs` in it made by this user. */
function dataDirWith(...subs: string[]): string {
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-subfolder-owner-'))
  dirs.push(dataDir)
  chmodSync(dataDir, 0o777)
  for (const sub of subs) mkdirSync(join(dataDir, sub), { recursive: true, mode: 0o700 })
  return dataDir
}

/** `folder` kept from the other user: it may not enter it (`none`), or may read it but not write in it (`read`). */
function shutOut(folder: string, left: 'none' | 'read'): void {
  // As root: the folder root's own, as root makes it; as this user, the mode cut to what another user would meet.
  if (asRoot) chmodSync(folder, left === 'none' ? 0o700 : 0o755)
  else {
    chmodSync(folder, left === 'none' ? 0o000 : 0o555)
    shut.push(folder)
  }
}

async function run(args: string[], env: Record<string, string>) {
  const spawned = asAnotherUser(args, childEnv({ PORT: '0', WEBHOOK_SECRET: 'whsec_other_user', ADMIN_TOKEN: 'other-user-admin-token-0123456789', ...env }))
  const { code } = await spawned.exited
  return { code, out: spawned.stdout(), err: spawned.stderr() }
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
/** `(nobody, uid 65534)`, or this user's name and uid when the tests do not run as root. */
const USER = '\\([^)]*uid \\d+\\)'
const WAY_OUT = 'Run switchboard as the user that owns it, or give this user access to it \\(chown or chmod\\)'

it('serve with a recordings folder this user may not enter refuses to start: one line naming it, its owner and mode, exit 2', async () => {
  const dataDir = dataDirWith('recordings')
  shutOut(join(dataDir, 'recordings'), 'none')
  const served = await run(['serve'], { DATA_DIR: dataDir })
  expect(served.err).toMatch(
    new RegExp(
      `^error: Invalid configuration: DATA_DIR recordings folder: ${escaped(join(dataDir, 'recordings', 'tmp'))} cannot be created: this user ${USER} may not enter ${escaped(join(dataDir, 'recordings'))} — permission denied; it is owner uid \\d+, mode 0?[0-7]{3}\\. ${WAY_OUT}\\n$`,
    ),
  )
  expect(served.code).toBe(2)
  expect(served.out).not.toMatch(/running at/)

  // Its tmp/ there and open to this user, the folder itself not: said at start, not at the first recording's download.
  const readOnly = dataDirWith('recordings/tmp')
  chmodSync(join(readOnly, 'recordings', 'tmp'), 0o777)
  shutOut(join(readOnly, 'recordings'), 'read')
  const started = await run(['serve'], { DATA_DIR: readOnly })
  expect(started.err).toMatch(
    new RegExp(
      `^error: Invalid configuration: DATA_DIR recordings folder: ${escaped(join(readOnly, 'recordings'))} cannot be used: this user ${USER} may not list and write in it — permission denied; it is owner uid \\d+, mode 0?[0-7]{3}\\. ${WAY_OUT}\\n$`,
    ),
  )
  expect(started.code).toBe(2)
}, 60_000)

it('a report written to an outbox folder this user may not write in fails with one line naming the folder and the way out — the log line too', async () => {
  const dataDir = dataDirWith('outbox')
  // The service's database, made by the user that runs it (`report send` reads the day from it).
  expect((await run(['migrate'], { DATA_DIR: dataDir })).code).toBe(0)
  shutOut(join(dataDir, 'outbox'), 'read')
  const sent = await run(['report', 'send', '--date', '2026-01-14'], { DATA_DIR: dataDir, REPORT_TO: 'ops@example.com', LOG_LEVEL: 'error' })
  const line = `${escaped(join(dataDir, 'outbox'))}/[^ ]+\\.eml\\.tmp cannot be opened: this user ${USER} may not write in ${escaped(join(dataDir, 'outbox'))} — permission denied; it is owner uid \\d+, mode 0?[0-7]{3}\\. ${WAY_OUT}`
  // The log (LOG_LEVEL=error) goes to stderr before it.
  expect(sent.err).toMatch(new RegExp(`\\nerror: the report was not sent: ${line} \\(mail [\\w-]+\\)\\n$`))
  expect(sent.code).toBe(1)
  // The log line says the same (as JSON or as text, whichever the log is written as), recorded as a failed mail.
  expect(sent.err.match(new RegExp(line, 'g'))?.length).toBe(2)
  expect(sent.err).toMatch(/mail could not be written to the outbox/)
  expect(`${sent.out}${sent.err}`).not.toMatch(/EACCES/)
}, 60_000)

it('a batch recipe run on an inbox this user may not read, or whose failed/ it may not make, fails with one line naming the folder', async () => {
  const dataDir = dataDirWith('inbox')
  const inbox = join(dataDir, 'inbox')
  shutOut(inbox, 'none')
  const env = { DATA_DIR: dataDir, RECIPES_TYPECHECK: 'false', VOICE_API_KEY: 'sk_test_other_user' }
  const listed = await run(['recipes', 'run', 'nightly-batch'], env)
  expect(listed.out).toMatch(
    new RegExp(`^error: ${escaped(inbox)} cannot be listed: this user ${USER} may not list and write in it — permission denied; it is owner uid \\d+, mode 0?[0-7]{3}\\. ${WAY_OUT} \\(at [^)]*nightly-batch\\.ts:\\d+:\\d+\\)$`, 'm'),
  )
  expect(listed.code).toBe(1)
  expect(`${listed.out}${listed.err}`).not.toMatch(/EACCES/)

  // Readable but not writable: a file that can never be a batch is parked in failed/, which cannot be made.
  chmodSync(inbox, 0o700)
  copyFileSync(join(ROOT, 'data/samples/leads.csv'), join(inbox, 'leads.xlsx'))
  utimesSync(join(inbox, 'leads.xlsx'), new Date('2026-01-01'), new Date('2026-01-01'))
  shutOut(inbox, 'read')
  const parked = await run(['recipes', 'run', 'nightly-batch'], env)
  expect(parked.out).toMatch(
    new RegExp(`^error: ${escaped(join(inbox, 'failed'))} cannot be created: this user ${USER} may not write in ${escaped(inbox)} — permission denied; it is owner uid \\d+, mode 0?[0-7]{3}\\. ${WAY_OUT} \\(at `, 'm'),
  )
  expect(parked.code).toBe(1)
}, 60_000)

it("a do-not-call file (DATA_DIR/dnc.csv) this user may not read stops a batch with one line naming it, its owner and mode and the way out", async () => {
  const dataDir = dataDirWith('inbox')
  const inbox = join(dataDir, 'inbox')
  chmodSync(inbox, 0o777)
  copyFileSync(join(ROOT, 'data/samples/leads.csv'), join(inbox, 'leads.csv'))
  utimesSync(join(inbox, 'leads.csv'), new Date('2026-01-01'), new Date('2026-01-01'))
  const dnc = join(dataDir, 'dnc.csv')
  writeFileSync(dnc, '+919876543210\n')
  // Its maker's alone (as this user, no one's).
  chmodSync(dnc, asRoot ? 0o600 : 0o000)
  const ran = await run(['recipes', 'run', 'nightly-batch'], { DATA_DIR: dataDir, RECIPES_TYPECHECK: 'false', VOICE_API_KEY: 'sk_test_other_user' })
  expect(ran.out).toMatch(
    new RegExp(
      `^error: could not process leads\\.csv \\(the do-not-call file ${escaped(dnc)} cannot be read by this user ${USER} — permission denied; the file is owner uid \\d+, mode 0?[0-7]{3}: give this user read access \\(chmod or chown\\), or copy it where this user may read it\\)`,
      'm',
    ),
  )
  expect(ran.code).toBe(1)
}, 60_000)

it('an inbox file this user may not read is parked in failed/ with a reason naming its owner and mode — every run failed on a bare EACCES', async () => {
  const dataDir = dataDirWith('inbox')
  const inbox = join(dataDir, 'inbox')
  chmodSync(inbox, 0o777)
  const csv = join(inbox, 'leads.csv')
  copyFileSync(join(ROOT, 'data/samples/leads.csv'), csv)
  utimesSync(csv, new Date('2026-01-01'), new Date('2026-01-01'))
  // Its maker's alone (as this user, no one's).
  chmodSync(csv, asRoot ? 0o600 : 0o000)
  const ran = await run(['recipes', 'run', 'nightly-batch'], { DATA_DIR: dataDir, RECIPES_TYPECHECK: 'false', VOICE_API_KEY: 'sk_test_other_user' })
  expect(`${ran.out}${ran.err}`).not.toMatch(/EACCES/)
  const reason = readFileSync(join(inbox, 'failed', 'leads.csv.error.txt'), 'utf8')
  expect(reason).toMatch(new RegExp(`^cannot read leads\\.csv: this user ${USER} may not read it — permission denied; the file is owner uid \\d+, mode 0?[0-7]{3}: give this user read access \\(chmod or chown\\)\n$`))
  expect(ran.code).toBe(0)
}, 60_000)

it('doctor names the data folders this user may not write in — the first with its owner and mode, the rest after it — and exits 1', async () => {
  const dataDir = dataDirWith('outbox', 'inbox/failed')
  chmodSync(join(dataDir, 'inbox'), 0o777)
  shutOut(join(dataDir, 'outbox'), 'read')
  shutOut(join(dataDir, 'inbox', 'failed'), 'read')
  const checked = await run(['doctor'], { DATA_DIR: dataDir, RECIPES_TYPECHECK: 'false' })
  expect(checked.out).toMatch(
    new RegExp(
      `^PROBLEM\\s+folders\\s+this user ${USER} may not write in ${escaped(join(dataDir, 'outbox'))} \\(owner uid \\d+, mode 0?[0-7]{3}\\): mail written without SMTP_URL \\(the daily report\\) fails; also ${escaped(join(dataDir, 'inbox', 'failed'))} → run switchboard as the user that owns it, or give this user access to it \\(chown or chmod\\)$`,
      'm',
    ),
  )
  expect(checked.out).toMatch(/^doctor: 1 problem\(s\) to fix/m)
  expect(checked.code).toBe(1)

  // Its folders open to it again: the line is ok.
  chmodSync(join(dataDir, 'outbox'), 0o777)
  chmodSync(join(dataDir, 'inbox', 'failed'), 0o777)
  const fixed = await run(['doctor'], { DATA_DIR: dataDir, RECIPES_TYPECHECK: 'false' })
  expect(fixed.out).toMatch(new RegExp(`^ok\\s+folders\\s+this user ${USER} may write in DATA_DIR and its folders$`, 'm'))
}, 60_000)

it('serve says at start which data folders this user may not write in — the outbox, the inbox — and runs on', async () => {
  const dataDir = dataDirWith('outbox', 'inbox')
  shutOut(join(dataDir, 'outbox'), 'read')
  const spawned = asAnotherUser(['serve'], childEnv({ PORT: '0', WEBHOOK_SECRET: 'whsec_other_user', ADMIN_TOKEN: 'other-user-admin-token-0123456789', DATA_DIR: dataDir, LOG_LEVEL: 'info' }))
  try {
    await expect.poll(() => spawned.stdout(), { timeout: 30_000, interval: 100 }).toMatch(/"msg":"switchboard ready"/)
    // Logged just after the ready line; the log is written asynchronously, so they can reach the pipe a moment later.
    const warnedLines = () => spawned.stdout().split('\n').filter((line) => line.includes('may not write in'))
    await expect.poll(() => warnedLines().length, { timeout: 10_000, interval: 50 }).toBeGreaterThanOrEqual(2)
    const warned = warnedLines().map((line) => JSON.parse(line) as { level: number; folder: string; owner_mode?: string; msg: string })
    const said = (folder: string, what: string) => ({
      level: 40,
      time: expect.any(Number),
      folder,
      owner_mode: expect.stringMatching(/^owner uid \d+, mode 0?[0-7]{3}$/),
      msg: expect.stringMatching(new RegExp(`^this user ${USER} may not write in ${escaped(folder)}: ${what} — run switchboard as the user that owns it, or give this user access to it \\(chown or chmod\\)$`)),
    })
    expect(warned).toEqual([
      said(join(dataDir, 'outbox'), 'mail written without SMTP_URL \\(the daily report\\) fails'),
      said(join(dataDir, 'inbox'), 'batch files dropped in for nightly-batch are not moved on, and fail again every run'),
    ])
  } finally {
    spawned.child.kill('SIGTERM')
    await spawned.exited
  }
}, 60_000)
