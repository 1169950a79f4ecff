import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { main } from '../../src/cli.ts'
import { listMailLog } from '../../src/reports/index.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { closedPort, startSmtp } from './smtp.ts'
import { DAY, EXPECTED, seedKnownDay } from './seed.ts'

async function run(argv: string[], env: Record<string, string>) {
  let stdout = ''
  let stderr = ''
  const code = await main(argv, { env, stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) })
  return { code, stdout, stderr }
}

describeEachDialect('report send (CLI)', (dialect) => {
  let rt: TestRuntime | undefined
  let smtp: Awaited<ReturnType<typeof startSmtp>> | undefined
  afterEach(async () => {
    await rt?.close()
    await smtp?.close()
    rt = smtp = undefined
  })

  async function setup(extra: Record<string, string> = {}) {
    rt = await createTestRuntime({ dialect })
    await seedKnownDay(rt)
    return {
      DATABASE_URL: rt.store.url,
      DATA_DIR: rt.dataDir,
      WEBHOOK_SECRET: 'whsec_test_secret',
      VOICE_API_KEY: 'sk_live_report',
      VOICE_API_BASE_URL: 'http://127.0.0.1:9',
      RECIPES_TIMEZONE: 'Asia/Kolkata',
      LOG_LEVEL: 'silent',
      ...extra,
    }
  }

  it('--dry-run prints what would be sent and sends, writes and records nothing', async () => {
    smtp = await startSmtp()
    const env = await setup({ SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, REPORT_TO: 'ops@example.com' })
    const { code, stdout, stderr } = await run(['report', 'send', '--date', DAY, '--dry-run'], env)
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(stdout).toContain('dry run — nothing sent or written')
    expect(stdout).toContain('to:       ops@example.com')
    expect(stdout).toContain('subject:  switchboard daily report — 2026-11-20 (Asia/Kolkata)')
    expect(stdout).not.toContain('  day:')
    expect(stdout).toContain(`${EXPECTED.calls} calls · connect ${EXPECTED.connectRate}% · success ${EXPECTED.successRate}%`)
    expect(smtp.messages).toHaveLength(0)
    expect(await listMailLog(rt!)).toEqual([])
    expect(existsSync(join(rt!.dataDir, 'outbox'))).toBe(false)

    // Without --date: yesterday where the campaign runs, said in so many words.
    const yesterday = await run(['report', 'send', '--dry-run'], env)
    expect(yesterday.stdout).toMatch(/^ {2}day: {6}\d{4}-\d{2}-\d{2}, yesterday in Asia\/Kolkata \(--date YYYY-MM-DD for another day\)$/m)

    const json = await run(['report', 'send', '--date', DAY, '--dry-run', '--json', '--to', 'a@example.com', '--to', 'b@example.com'], env)
    expect(json.code).toBe(0)
    const out = JSON.parse(json.stdout) as { dry_run: boolean; status: string; to: string[]; plan: unknown[]; report: { totals: { calls: number; success_rate: number } } }
    expect(out).toMatchObject({ dry_run: true, status: 'planned', to: ['a@example.com', 'b@example.com'] })
    expect(out.plan).toEqual([{ kind: 'mail', to: ['a@example.com', 'b@example.com'], subject: 'switchboard daily report — 2026-11-20 (Asia/Kolkata)', attachments: ['conversations-2026-11-20.csv'] }])
    expect(out.report.totals).toMatchObject({ calls: EXPECTED.calls, success_rate: EXPECTED.successRate })
    expect(smtp.messages).toHaveLength(0)
  })

  it('sends for real into the outbox without SMTP_URL', async () => {
    const env = await setup({ REPORT_TO: 'ops@example.com' })
    const { code, stdout } = await run(['report', 'send', '--date', DAY], env)
    expect(code).toBe(0)
    expect(stdout).toMatch(/^written:/)
    const files = readdirSync(join(rt!.dataDir, 'outbox'))
    expect(files).toHaveLength(1)
    expect((await listMailLog(rt!))[0]).toMatchObject({ status: 'written', recipients: ['ops@example.com'] })
  })

  it('a display name with a comma, in REPORT_TO or --to, stays one recipient', async () => {
    smtp = await startSmtp()
    const env = await setup({ SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, REPORT_TO: '"Doe, John" <john@x.example>, ops@example.com' })
    const both = await run(['report', 'send', '--date', DAY], env)
    expect(both).toMatchObject({ code: 0, stderr: '' })
    expect(both.stdout).toContain('to:       "Doe, John" <john@x.example>, ops@example.com')
    const alone = await run(['report', 'send', '--date', DAY, '--to', '"Roe, Jane" <jane@x.example>'], env)
    expect(alone).toMatchObject({ code: 0, stderr: '' })
    expect(smtp.envelopes).toEqual([['john@x.example', 'ops@example.com'], ['jane@x.example']])
    expect((await listMailLog(rt!)).every((m) => m.status === 'sent')).toBe(true)
  })

  it('a recipient the relay refuses for good while it takes the others is named, and the command exits 1', async () => {
    smtp = await startSmtp({
      onRcptTo(address, _session, callback) {
        if (address.address === 'gone@y.example') return callback(Object.assign(new Error('mailbox unavailable'), { responseCode: 550 }))
        callback()
      },
    })
    const env = await setup({ SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, REPORT_TO: 'ops@x.example, gone@y.example' })
    const text = await run(['report', 'send', '--date', DAY], env)
    expect(text.code).toBe(1)
    expect(text.stdout).toMatch(/^sent:/)
    expect(text.stdout).toMatch(/^ {2}refused: {2}gone@y\.example — .*550.* \(for good; not sent to them, mail \S+\)$/m)
    const json = await run(['report', 'send', '--date', DAY, '--json'], env)
    expect(json.code).toBe(1)
    expect(JSON.parse(json.stdout)).toMatchObject({ status: 'sent', refused: [{ recipients: ['gone@y.example'], status: 'failed', error: expect.stringContaining('550'), next_attempt_at: null }] })
    expect(smtp.envelopes).toEqual([['ops@x.example'], ['ops@x.example']])
  })

  it('a recipient refused for now and another for good: the queued line, and the one refused for good named — exit 1', async () => {
    smtp = await startSmtp({
      onRcptTo(address, _session, callback) {
        if (address.address === 'later@y.example') return callback(Object.assign(new Error('try again later'), { responseCode: 450 }))
        if (address.address === 'gone@y.example') return callback(Object.assign(new Error('mailbox unavailable'), { responseCode: 550 }))
        callback()
      },
    })
    const env = await setup({ SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, REPORT_TO: 'later@y.example, gone@y.example' })
    const text = await run(['report', 'send', '--date', DAY], env)
    expect(text.code).toBe(1)
    // Only "queued: …" was printed, and the exit code 1 said nothing of why.
    expect(text.stdout).toMatch(/^queued: /)
    expect(text.stdout).toMatch(/^ {2}refused: {2}gone@y\.example — .*550.* \(for good; not sent to them, mail \S+\)$/m)
  })

  it('--json of a report the relay did not take gives when the outbox tries it next', async () => {
    const env = await setup({ SMTP_URL: `smtp://127.0.0.1:${await closedPort()}`, REPORT_TO: 'ops@x.example' })
    const json = await run(['report', 'send', '--date', DAY, '--json'], env)
    expect(json.code).toBe(0)
    const out = JSON.parse(json.stdout) as { status: string; next_attempt_at: string }
    expect(out.status).toBe('queued')
    expect(Date.parse(out.next_attempt_at)).toBeGreaterThan(0)
  })

  it('user mistakes are one line and exit 2', async () => {
    const env = await setup()
    expect(await run(['report', 'send', '--date', '2026-13-01', '--dry-run'], { ...env, REPORT_TO: 'x@example.com' })).toMatchObject({ code: 2, stderr: 'error: --date: date must be a real calendar day (got "2026-13-01")\n' })
    // The day after it is a five-digit year: it was taken, then failed (exit 1) naming "+010000-01".
    expect(await run(['report', 'send', '--date', '9999-12-31', '--dry-run'], { ...env, REPORT_TO: 'x@example.com' })).toMatchObject({ code: 2, stderr: 'error: --date: date must be from 0001-01-01 to 9998-12-31 (got "9999-12-31")\n' })
    expect(await run(['report', 'send', '--timezone', 'Nowhere/City', '--dry-run'], { ...env, REPORT_TO: 'x@example.com' })).toMatchObject({ code: 2, stderr: 'error: --timezone: unknown time zone "Nowhere/City" (use an IANA name such as Asia/Kolkata)\n' })
    // A line break typed into it is shown escaped, on the error's one line (as --to's and REPORT_TO's are).
    expect(await run(['report', 'send', '--timezone', 'Asia/Kolkata\r\nBcc: x@evil.example', '--dry-run'], { ...env, REPORT_TO: 'x@example.com' })).toMatchObject({ code: 2, stderr: 'error: --timezone: unknown time zone "Asia/Kolkata\\x0d\\x0aBcc: x@evil.example" (use an IANA name such as Asia/Kolkata)\n' })
    expect(await run(['report', 'send'], env)).toMatchObject({ code: 2, stderr: 'error: no recipient: set REPORT_TO or pass --to someone@example.com\n' })
  })
})
