import { withDatabase } from '../helpers/stored-data-dir.ts'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { main } from '../../src/cli.ts'
import { liveEffects, type Effects } from '../../src/effects.ts'
import { sendDailyReport, sendMail } from '../../src/reports/index.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

// Each of these once went out to someone else than was typed: `a@x b@y` became `"b@y" <a@x>`, and a `Bcc:` after a
// space or a line break replaced the recipients before it. A recipient list is comma-separated addresses, or refused.

const dryRun = (): Effects => ({ dryRun: true, plan: [] })

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn()
})
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-addresses-'))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}
const env = (dir: string, more: Record<string, string> = {}) => ({
  DATA_DIR: dir,
  VOICE_API_KEY: 'sk_live_x',
  VOICE_API_BASE_URL: 'http://127.0.0.1:9',
  WEBHOOK_SECRET: 'whsec_x',
  LOG_LEVEL: 'silent',
  ...more,
})

async function run(argv: string[], environment: Record<string, string>) {
  let stdout = ''
  let stderr = ''
  const code = await main(argv, { env: environment, stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) })
  return { code, stdout, stderr }
}

describe('REPORT_TO, --to and MAIL_FROM are comma-separated addresses, nothing else', () => {
  it.each([
    [{ REPORT_TO: 'ops@x.com boss@y.com' }, 'error: Invalid configuration: REPORT_TO must be email addresses, comma-separated: put a comma between two addresses (got "ops@x.com boss@y.com")\n'],
    [{ REPORT_TO: 'a@x.com\nBcc: e@x.com' }, 'error: Invalid configuration: REPORT_TO must be email addresses, comma-separated: a control character (a line break, a tab…) is not allowed (got "a@x.com\\x0aBcc: e@x.com")\n'],
    [{ REPORT_TO: 'ops@x.com, a@x.com Bcc: e@x.com' }, 'error: Invalid configuration: REPORT_TO must be email addresses, comma-separated (got "a@x.com Bcc: e@x.com")\n'],
    [{ REPORT_TO: 'team: a@x.com, b@y.com;' }, 'error: Invalid configuration: REPORT_TO must be email addresses, comma-separated (got "team: a@x.com")\n'],
  ])('%o stops start-up with one line naming REPORT_TO and the entry, exit 2', async (bad, line) => {
    const r = await run(['report', 'send', '--date', '2026-11-30', '--dry-run'], env(tempDir(), bad))
    expect(r.stderr).toBe(line)
    expect(r.code).toBe(2)
    expect(r.stdout).toBe('')
  })

  it.each([
    ['a@x.com Bcc: e@x.com', 'error: --to must be email addresses, comma-separated, as REPORT_TO (got "a@x.com Bcc: e@x.com")\n'],
    ['a@example.com\r\nBcc: evil@x.com', 'error: --to must be email addresses, comma-separated, as REPORT_TO: a control character (a line break, a tab…) is not allowed (got "a@example.com\\x0d\\x0aBcc: evil@x.com")\n'],
    ['a@x.com\tb@y.com', 'error: --to must be email addresses, comma-separated, as REPORT_TO: a control character (a line break, a tab…) is not allowed (got "a@x.com\\x09b@y.com")\n'],
    ['a@x.com b@y.com', 'error: --to must be email addresses, comma-separated, as REPORT_TO: put a comma between two addresses (got "a@x.com b@y.com")\n'],
    ['"Doe, John <j@x.com>', 'error: --to must be email addresses, comma-separated, as REPORT_TO: a quote is not closed (got ""Doe, John <j@x.com>")\n'],
  ])('--to %j is refused with one line naming --to and the entry, exit 2', async (to, line) => {
    const r = await run(['report', 'send', '--date', '2026-11-30', '--dry-run', '--to', to], env(tempDir()))
    expect(r.stderr).toBe(line)
    expect(r.code).toBe(2)
    expect(r.stdout).toBe('')
  })

  it.each([
    ['a@x.com\r\nBcc: e@x.com', 'error: Invalid configuration: MAIL_FROM must be one email address, e.g. switchboard@example.com or Reports <reports@example.com>: a control character (a line break, a tab…) is not allowed (got "a@x.com\\x0d\\x0aBcc: e@x.com")\n'],
    ['a@x.com b@y.com', 'error: Invalid configuration: MAIL_FROM must be one email address, e.g. switchboard@example.com or Reports <reports@example.com>: put a comma between two addresses (got "a@x.com b@y.com")\n'],
    ['a@x.com, b@y.com', 'error: Invalid configuration: MAIL_FROM must be one email address, e.g. switchboard@example.com or Reports <reports@example.com> (got "a@x.com, b@y.com")\n'],
  ])('MAIL_FROM %j is refused at start-up and no message is written', async (from, line) => {
    const dir = tempDir()
    const r = await run(['report', 'send', '--date', '2026-11-30', '--to', 'z@example.com'], env(dir, { MAIL_FROM: from }))
    expect(r.stderr).toBe(line)
    expect(r.code).toBe(2)
    expect(readdirSync(dir)).not.toContain('outbox')
  })

  it('plain and named addresses, with spaces around the commas, still go to everyone typed', async () => {
    const dir = await withDatabase(tempDir())
    const r = await run(
      ['report', 'send', '--date', '2026-11-30', '--dry-run', '--json', '--to', ' a@x.com ,Ops <ops@y.com>,  "Doe, John" <j@z.com> ', '--to', 'b@x.com'],
      env(dir, { MAIL_FROM: 'Reports <reports@example.com>', REPORT_TO: 'team@example.com , "Lead, Ops" <lead@example.com>' }),
    )
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    expect((JSON.parse(r.stdout) as { to: string[] }).to).toEqual(['a@x.com', '"Ops" <ops@y.com>', '"Doe, John" <j@z.com>', 'b@x.com'])
  })
})

describe('recipients a recipe passes are read as strictly', () => {
  let rt: TestRuntime
  afterEach(async () => rt?.close())

  it.each([['a@x.com b@y.com'], ['a@x.com\r\nBcc: e@x.com'], [['ok@x.com', 'a@x.com Bcc: e@x.com']]])('ctx.mail.send({ to: %j }) is refused naming the entry', async (to) => {
    rt = await createTestRuntime({ env: { VOICE_API_KEY: 'sk_live_x', VOICE_API_BASE_URL: 'http://127.0.0.1:9' } })
    await expect(sendMail(rt, { to, subject: 's', text: 't' }, liveEffects())).rejects.toThrow(/^mail recipients \(to\) must be email addresses, comma-separated.*\(got "a@x\.com[^"]*"\)$/)
    await expect(sendMail(rt, { to, subject: 's', text: 't' }, dryRun())).rejects.toThrow(/^mail recipients \(to\) must be/)
  })

  it('ctx.reports.sendDailyReport({ to }) too', async () => {
    rt = await createTestRuntime({ env: { VOICE_API_KEY: 'sk_live_x', VOICE_API_BASE_URL: 'http://127.0.0.1:9' } })
    await expect(sendDailyReport(rt, { date: '2026-11-30', to: 'ops@x.com boss@y.com' }, dryRun())).rejects.toThrow(
      'the report\'s recipients (to) must be email addresses, comma-separated: put a comma between two addresses (got "ops@x.com boss@y.com")',
    )
  })
})
