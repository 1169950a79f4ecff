import { afterEach, expect, it } from 'vitest'
import type { SMTPServerOptions } from 'smtp-server'
import { main } from '../../src/cli.ts'
import { deliverDue, listMailLog, MAIL_RETRY_DELAYS_MS, sendDailyReport, sendMail } from '../../src/reports/index.ts'
import { liveEffects } from '../../src/effects.ts'
import { createManualClock, type ManualClock } from '../../src/utils/clock.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { startSmtp } from './smtp.ts'
import { DAY } from './seed.ts'
import { metricTotal } from '../helpers/metrics.ts'

const NO_PROVIDER = { VOICE_API_KEY: 'sk_live_report', VOICE_API_BASE_URL: 'http://127.0.0.1:9' }

/** An SMTP refusal as smtp-server sends it: the code and text go to the client as the RCPT TO reply. */
function refusal(code: number, text: string): Error {
  return Object.assign(new Error(text), { responseCode: code })
}

/** A relay that refuses `address` with 450 for its first `times` RCPTs, then takes it; and `gone` with 550 always. */
function flakyRelay(options: { busy?: string; times?: number; gone?: string }): { rcpts: string[]; options: Partial<SMTPServerOptions> } {
  const rcpts: string[] = []
  let busyLeft = options.times ?? 1
  return {
    rcpts,
    options: {
      onRcptTo(address, _session, cb) {
        rcpts.push(address.address)
        if (address.address === options.gone) return cb(refusal(550, 'mailbox unavailable'))
        if (address.address === options.busy && busyLeft > 0) {
          busyLeft--
          return cb(refusal(450, 'mailbox busy, try again later'))
        }
        cb()
      },
    },
  }
}

describeEachDialect('mail recipients', (dialect) => {
  let rt: TestRuntime | undefined
  let smtp: Awaited<ReturnType<typeof startSmtp>> | undefined
  afterEach(async () => {
    await rt?.close()
    await smtp?.close()
    rt = smtp = undefined
  })

  async function setup(relay: Partial<SMTPServerOptions>, env: Record<string, string> = {}) {
    smtp = await startSmtp(relay)
    const clock: ManualClock = createManualClock('2026-11-21T02:30:00Z')
    rt = await createTestRuntime({ dialect, clock, env: { ...NO_PROVIDER, SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, ...env } })
    return { rt, clock, smtp }
  }

  it('a recipient refused for now (450) is retried alone; the one who got it gets no second copy', async () => {
    const relay = flakyRelay({ busy: 'b@y.example' })
    const { rt, clock, smtp } = await setup(relay.options, { REPORT_TO: 'a@x.example,b@y.example' })
    const result = await sendDailyReport(rt, { date: DAY }, liveEffects())
    expect(result.status).toBe('sent')
    expect(smtp.envelopes).toEqual([['a@x.example']])

    // The report's row is settled for a; b waits in the outbox on a row of its own, with the relay's reply.
    let log = await listMailLog(rt)
    expect(log).toHaveLength(2)
    expect(log.find((m) => m.id === result.mailId)).toMatchObject({ status: 'sent', recipients: ['a@x.example'], attempts: 1, error: null })
    const pending = log.find((m) => m.id !== result.mailId)!
    expect(pending).toMatchObject({ status: 'queued', recipients: ['b@y.example'], attempts: 1, messageId: result.messageId, subject: result.subject, nextAttemptAt: clock.now() + MAIL_RETRY_DELAYS_MS[0] })
    // The relay's reply alone: the row names its recipient (it read "b@y.example: b@y.example: EENVELOPE: 450 …").
    expect(pending.error).toMatch(/^EENVELOPE: 450 mailbox busy, try again later/)

    await clock.advance(MAIL_RETRY_DELAYS_MS[0])
    expect(await deliverDue(rt, 'test')).toEqual([{ status: 'sent', attempts: 2 }])
    expect(smtp.envelopes).toEqual([['a@x.example'], ['b@y.example']])
    // The same message both times (one Message-ID), and a was offered it once.
    expect(smtp.messages.map((m) => m.messageId)).toEqual([result.messageId, result.messageId])
    expect(relay.rcpts.filter((r) => r === 'a@x.example')).toHaveLength(1)
    log = await listMailLog(rt)
    expect(log.map((m) => [m.recipients, m.status])).toEqual(expect.arrayContaining([[['a@x.example'], 'sent'], [['b@y.example'], 'sent']]))
    expect(log).toHaveLength(2)

    await clock.advance(24 * 3_600_000)
    expect(await deliverDue(rt, 'test')).toEqual([])
    expect(smtp.envelopes).toHaveLength(2)
    expect(await metricTotal(rt, 'switchboard_mail_sent_total')).toBe(2)
    expect(await metricTotal(rt, 'switchboard_mail_failures_total')).toBe(0)
  })

  it('a recipient with an internationalised domain refused for now is retried alone (nodemailer names it in ASCII)', async () => {
    const relay = flakyRelay({ busy: 'ops@bücher.example' })
    const { rt, clock, smtp } = await setup(relay.options)
    const result = await sendMail(rt, { to: 'a@x.example, ops@bücher.example', subject: 'idn', text: 't' }, liveEffects())
    expect(result.status).toBe('sent')
    expect(result.refused).toEqual([expect.objectContaining({ recipients: ['ops@bücher.example'], status: 'queued' })])
    expect((await listMailLog(rt)).find((m) => m.id === result.id)).toMatchObject({ status: 'sent', recipients: ['a@x.example'] })
    await clock.advance(MAIL_RETRY_DELAYS_MS[0])
    expect(await deliverDue(rt, 'test')).toEqual([{ status: 'sent', attempts: 2 }])
    expect(smtp.envelopes).toEqual([['a@x.example'], ['ops@bücher.example']])
  })

  it('a recipient refused for good (550) is recorded as failed with the server\'s reply, shown by `mail list`', async () => {
    const relay = flakyRelay({ gone: 'c@z.example' })
    const { rt, clock, smtp } = await setup(relay.options)
    const result = await sendMail(rt, { to: ['a@x.example', 'c@z.example'], subject: 'hello', text: 'hi' }, liveEffects())
    expect(result.status).toBe('sent')
    expect(result.refused).toEqual([{ mailId: expect.any(String), recipients: ['c@z.example'], status: 'failed', error: expect.stringMatching(/550 mailbox unavailable/) }])
    expect(smtp.envelopes).toEqual([['a@x.example']])

    const env = {
      DATABASE_URL: rt.store.url,
      DATA_DIR: rt.dataDir,
      WEBHOOK_SECRET: 'whsec_test_secret',
      LOG_LEVEL: 'silent',
      ...NO_PROVIDER,
    }
    let stdout = ''
    const code = await main(['mail', 'list', '--json'], { env, stdout: (t) => void (stdout += t), stderr: () => {} })
    expect(code).toBe(0)
    const rows = JSON.parse(stdout) as Array<{ id: string; status: string; recipients: string[]; error: string | null; created_at: string }>
    expect(rows.map((r) => [r.recipients, r.status]).sort()).toEqual([[['a@x.example'], 'sent'], [['c@z.example'], 'failed']])
    expect(rows.find((r) => r.status === 'failed')).toMatchObject({ id: result.refused![0]!.mailId, error: expect.stringMatching(/550 mailbox unavailable/) })
    // Times as ISO 8601, as in every other --json listing.
    expect(rows.map((r) => r.created_at)).toEqual([expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/), expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/)])

    // Not retried: nothing is due, ever.
    await clock.advance(24 * 3_600_000)
    expect(await deliverDue(rt, 'test')).toEqual([])
    expect(relay.rcpts).toEqual(['a@x.example', 'c@z.example'])
    expect(await metricTotal(rt, 'switchboard_mail_failures_total')).toBe(1)
    expect(await metricTotal(rt, 'switchboard_mail_sent_total')).toBe(1)
  })

  it('every recipient refused, one for now and one for good: the first is retried, the second failed at once', async () => {
    const relay = flakyRelay({ busy: 'b@y.example', gone: 'c@z.example' })
    const { rt, clock, smtp } = await setup(relay.options)
    const result = await sendMail(rt, { to: 'b@y.example, c@z.example', subject: 'hello', text: 'hi' }, liveEffects())
    expect(result).toMatchObject({ status: 'queued', nextAttemptAt: clock.now() + MAIL_RETRY_DELAYS_MS[0] })
    expect(result.error).toMatch(/450 mailbox busy/)
    expect(result.refused).toMatchObject([{ recipients: ['c@z.example'], status: 'failed' }])
    expect(smtp.envelopes).toEqual([])
    const log = await listMailLog(rt)
    expect(log.find((m) => m.id === result.id)).toMatchObject({ status: 'queued', recipients: ['b@y.example'] })
    expect(log.find((m) => m.id !== result.id)).toMatchObject({ status: 'failed', recipients: ['c@z.example'], error: expect.stringMatching(/550 mailbox unavailable/) })

    await clock.advance(MAIL_RETRY_DELAYS_MS[0])
    expect(await deliverDue(rt, 'test')).toEqual([{ status: 'sent', attempts: 2 }])
    expect(smtp.envelopes).toEqual([['b@y.example']])
    expect(relay.rcpts).toEqual(['b@y.example', 'c@z.example', 'b@y.example'])
    expect((await listMailLog(rt)).map((m) => m.status).sort()).toEqual(['failed', 'sent'])
  })

  // The relay's reply is what the Mail page, `mail list` and the log show: one quoting the credentials it refused put
  // SMTP_URL's password there.
  it("a relay's refusal that quotes SMTP_URL's password is kept without it", async () => {
    const relay: Partial<SMTPServerOptions> = {
      authOptional: false,
      allowInsecureAuth: true,
      onAuth(auth, _session, cb) {
        cb(Object.assign(new Error(`bad credentials for ${auth.username}:${auth.password ?? ''}`), { responseCode: 535 }))
      },
    }
    smtp = await startSmtp(relay)
    rt = await createTestRuntime({ dialect, clock: createManualClock('2026-11-21T02:30:00Z'), env: { ...NO_PROVIDER, SMTP_URL: `smtp://reports:s3cret-relay-pw@127.0.0.1:${smtp.port}`, REPORT_TO: 'a@x.example' } })
    const result = await sendDailyReport(rt, { date: DAY }, liveEffects())
    const [row] = await listMailLog(rt)
    expect(row!.error).toMatch(/bad credentials for reports:\[redacted\]/)
    expect(JSON.stringify([result, row])).not.toContain('s3cret-relay-pw')
  })

  it('a display name with a comma stays one recipient', async () => {
    const { rt, smtp } = await setup({})
    const result = await sendMail(rt, { to: '"Doe, John" <john@x.example>, ops@example.com', subject: 'hello', text: 'hi' }, liveEffects())
    expect(result.status).toBe('sent')
    expect(smtp.envelopes).toEqual([['john@x.example', 'ops@example.com']])
    const to = smtp.messages[0]!.to
    expect(to && !Array.isArray(to) ? to.value : []).toEqual([
      { name: 'Doe, John', address: 'john@x.example' },
      { name: '', address: 'ops@example.com' },
    ])
    expect((await listMailLog(rt))[0]).toMatchObject({ status: 'sent', recipients: ['"Doe, John" <john@x.example>', 'ops@example.com'] })
  })
})
