import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse } from 'csv-parse/sync'
import { simpleParser, type ParsedMail } from 'mailparser'
import { afterEach, expect, it } from 'vitest'
import { deliverDue, listMailLog, MAIL_GIVE_UP_MS, MAIL_RETRY_DELAYS_MS, sendDailyReport, sendMail } from '../../src/reports/index.ts'
import { createManualClock, type ManualClock } from '../../src/utils/clock.ts'
import { liveEffects, type Effects } from '../../src/effects.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { closedPort, startSmtp } from './smtp.ts'
import { DAY, EXPECTED, FORMULA, IN_DAY, seedKnownDay, startedAtOf, TZ } from './seed.ts'
import { metricTotal } from '../helpers/metrics.ts'

const NO_PROVIDER = { VOICE_API_KEY: 'sk_live_report', VOICE_API_BASE_URL: 'http://127.0.0.1:9' }

/** Kolkata local time, computed independently of the code under test (no DST there). */
const ist = (ms: number | null) => (ms === null ? '' : `${new Date(ms + 5.5 * 3_600_000).toISOString().slice(0, 19)}+05:30`)
const neutral = (v: string) => (/^[=+\-@\t\r]/.test(v) ? `'${v}` : v)

function expectedCsvRows(): Array<Record<string, string>> {
  return IN_DAY.map((c) => {
    const results = c.results ?? {}
    return {
      conversation_id: c.conversation_id,
      agent_id: String(c.agent_id),
      campaign: c.campaign,
      contact_number: neutral(c.contact_number),
      status: c.status,
      duration_seconds: c.duration_seconds === null ? '' : String(c.duration_seconds),
      started_at: ist(startedAtOf(c)),
      ended_at: ist(c.ended_at),
      failure_reason: c.failure_reason ?? '',
      trace_id: c.trace_id,
      recipe: { tr_01: 'nightly-batch', tr_02: 'nightly-batch', tr_04: 'no-answer-followup' }[c.trace_id] ?? '',
      previous_conversation_id: c.trace_id === 'tr_04' ? 'conv_prev_2' : '',
      'result.callback_at': neutral(String(results.callback_at ?? '')),
      'result.intent': neutral(String(results.intent ?? '')),
      'result.notes': neutral(String(results.notes ?? '')),
    }
  }).sort((a, b) => a.conversation_id.localeCompare(b.conversation_id))
}

function checkReportMail(mail: ParsedMail): void {
  expect(mail.subject).toBe('switchboard daily report — 2026-11-20 (Asia/Kolkata)')
  expect(mail.from?.value[0]?.address).toBe('reports@switchboard.test')
  expect(mail.to && !Array.isArray(mail.to) ? mail.to.value.map((a) => a.address) : []).toEqual(['ops@example.com', 'lead@example.com'])
  expect(mail.text).toContain(`Calls          ${EXPECTED.calls}`)
  expect(mail.text).toContain(`Success rate   ${EXPECTED.successRate}%`)
  expect(mail.text).toContain(`Connect rate   ${EXPECTED.connectRate}%`)
  expect(typeof mail.html === 'string' && mail.html).toContain('38.1%')
  expect(mail.attachments).toHaveLength(1)
  const csv = mail.attachments[0]!
  expect(csv.filename).toBe('conversations-2026-11-20.csv')
  expect(csv.contentType).toBe('text/csv')
  expect([...csv.content.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf])
  const rows = parse(csv.content, { bom: true, columns: true }) as Array<Record<string, string>>
  expect(rows.sort((a, b) => a.conversation_id!.localeCompare(b.conversation_id!))).toEqual(expectedCsvRows())
  const formula = rows.find((r) => r.conversation_id === 'conv_utc_prev')!
  expect(formula['result.notes']).toBe(`'${FORMULA}`)
}

describeEachDialect('report mail', (dialect) => {
  let rt: TestRuntime | undefined
  let smtp: Awaited<ReturnType<typeof startSmtp>> | undefined
  afterEach(async () => {
    await rt?.close()
    await smtp?.close()
    rt = smtp = undefined
  })

  it('sends through a real SMTP server: headers, text and HTML parts, the CSV re-parses to the seeded rows, formulas neutralised', async () => {
    smtp = await startSmtp()
    rt = await createTestRuntime({
      dialect,
      env: { ...NO_PROVIDER, SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, MAIL_FROM: 'Switchboard <reports@switchboard.test>', REPORT_TO: 'ops@example.com, lead@example.com' },
      // 08:00 IST the next day, as the recipe runs it: the default date is "yesterday" there.
      clock: createManualClock('2026-11-21T02:30:00Z'),
    })
    await seedKnownDay(rt)
    const effects = liveEffects()
    const result = await sendDailyReport(rt, {}, effects)
    expect(result).toMatchObject({ status: 'sent', date: DAY, timezone: TZ })
    expect(smtp.messages).toHaveLength(1)
    checkReportMail(smtp.messages[0]!)
    expect(smtp.envelopes[0]).toEqual(['ops@example.com', 'lead@example.com'])
    expect(smtp.messages[0]!.messageId).toBe(result.messageId)
    expect(effects.plan).toEqual([{ kind: 'mail', to: ['ops@example.com', 'lead@example.com'], subject: result.subject, attachments: ['conversations-2026-11-20.csv'] }])

    const log = await listMailLog(rt)
    expect(log).toHaveLength(1)
    expect(log[0]).toMatchObject({ id: result.mailId, status: 'sent', attempts: 1, error: null, messageId: result.messageId, recipients: ['ops@example.com', 'lead@example.com'], subject: result.subject })
    expect(await metricTotal(rt, 'switchboard_mail_sent_total')).toBe(1)
    expect(await metricTotal(rt, 'switchboard_mail_failures_total')).toBe(0)
    expect(existsSync(join(rt.dataDir, 'outbox'))).toBe(false)
  })

  it('authenticates with the credentials in SMTP_URL', async () => {
    const logins: string[] = []
    smtp = await startSmtp({
      authOptional: false,
      allowInsecureAuth: true,
      onAuth(auth, _session, cb) {
        logins.push(`${auth.username}:${auth.password}`)
        if (auth.username === 'reporter' && auth.password === 'p@ss word') cb(null, { user: auth.username })
        else cb(new Error('Invalid username or password'))
      },
    })
    rt = await createTestRuntime({ dialect, env: { ...NO_PROVIDER, SMTP_URL: `smtp://reporter:${encodeURIComponent('p@ss word')}@127.0.0.1:${smtp.port}` } })
    const result = await sendMail(rt, { to: 'ops@example.com', subject: 'hello', text: 'hi' }, liveEffects())
    expect(result.status).toBe('sent')
    expect(logins).toEqual(['reporter:p@ss word'])
    expect(smtp.messages[0]?.subject).toBe('hello')
  })

  it('speaks implicit TLS for smtps:// URLs', async () => {
    // smtp-server's built-in self-signed certificate; the URL's query relaxes verification for it.
    smtp = await startSmtp({ secure: true })
    rt = await createTestRuntime({ dialect, env: { ...NO_PROVIDER, SMTP_URL: `smtps://127.0.0.1:${smtp.port}/?tls.rejectUnauthorized=false` } })
    const result = await sendMail(rt, { to: 'ops@example.com', subject: 'over tls', text: 'hi' }, liveEffects())
    expect(result.status).toBe('sent')
    expect(smtp.messages[0]?.subject).toBe('over tls')
  })

  it('writes an .eml to DATA_DIR/outbox without SMTP_URL, which parses back to the same report', async () => {
    rt = await createTestRuntime({ dialect, env: { ...NO_PROVIDER, MAIL_FROM: 'Switchboard <reports@switchboard.test>' }, clock: createManualClock('2026-11-21T02:30:00Z') })
    await seedKnownDay(rt)
    const result = await sendDailyReport(rt, { date: DAY, timezone: TZ, to: ['ops@example.com', 'lead@example.com'] }, liveEffects())
    expect(result.status).toBe('written')
    const files = readdirSync(join(rt.dataDir, 'outbox'))
    expect(files).toEqual([`20261121T023000000Z-${result.mailId}.eml`])
    expect(result.file).toBe(join(rt.dataDir, 'outbox', files[0]!))
    // The report's numbers are the user's alone, as the data folder is.
    expect([statSync(join(rt.dataDir, 'outbox')).mode & 0o777, statSync(result.file!).mode & 0o777]).toEqual([0o700, 0o600])
    const mail = await simpleParser(readFileSync(result.file!))
    checkReportMail(mail)
    expect(mail.messageId).toBe(result.messageId)
    const log = await listMailLog(rt)
    expect(log[0]).toMatchObject({ status: 'written', attempts: 1, messageId: result.messageId })
    expect(await metricTotal(rt, 'switchboard_mail_sent_total')).toBe(1)
  })

  it('an outbox that cannot be written records the mail failed, never queued with nothing to send', async () => {
    rt = await createTestRuntime({ dialect, env: NO_PROVIDER })
    writeFileSync(join(rt.dataDir, 'outbox'), 'a file where the folder should be')
    const result = await sendMail(rt, { to: 'ops@example.com', subject: 's', text: 't' }, liveEffects())
    expect(result.status).toBe('failed')
    expect(await listMailLog(rt)).toEqual([expect.objectContaining({ status: 'failed', attempts: 1, error: expect.stringMatching(/EEXIST|ENOTDIR/) })])
    expect(await metricTotal(rt, 'switchboard_mail_failures_total')).toBe(1)
    expect(await metricTotal(rt, 'switchboard_mail_pending')).toBe(0)
  })

  it('a closed SMTP port queues the message at once; the outbox retries on the documented backoff and gives up after a day', async () => {
    const port = await closedPort()
    const clock: ManualClock = createManualClock('2026-11-21T02:30:00Z')
    rt = await createTestRuntime({ dialect, clock, env: { ...NO_PROVIDER, SMTP_URL: `smtp://127.0.0.1:${port}`, REPORT_TO: 'ops@example.com' } })
    const result = await sendDailyReport(rt, { date: DAY }, liveEffects())
    expect(result.status).toBe('queued')
    expect(result.error).toMatch(/ECONNREFUSED/)
    let entry = (await listMailLog(rt))[0]!
    expect(entry).toMatchObject({ id: result.mailId, status: 'queued', attempts: 1 })
    // Each wait is exactly the documented delay: one ms early, nothing is due; on time, the next attempt.
    for (const [i, delay] of MAIL_RETRY_DELAYS_MS.entries()) {
      expect(entry.nextAttemptAt).toBe(clock.now() + delay)
      await clock.advance(delay - 1)
      expect(await deliverDue(rt, 'test')).toEqual([])
      await clock.advance(1)
      expect((await deliverDue(rt, 'test'))[0]).toMatchObject({ status: 'queued', attempts: i + 2 })
      entry = (await listMailLog(rt))[0]!
    }
    expect(await metricTotal(rt, 'switchboard_mail_failures_total')).toBe(0)
    // After a day without a relay, the message is given up on: failed, logged and counted.
    await clock.advanceTo(entry.createdAt + MAIL_GIVE_UP_MS)
    expect((await deliverDue(rt, 'test'))[0]).toMatchObject({ status: 'failed' })
    const log = await listMailLog(rt)
    expect(log[0]).toMatchObject({ id: result.mailId, status: 'failed', nextAttemptAt: null })
    // Said as given up, not as the relay's last temporary answer alone.
    expect(log[0]?.error).toMatch(/^given up after \d+ attempts over 24 h; the relay's last answer: .*ECONNREFUSED/)
    expect(await metricTotal(rt, 'switchboard_mail_failures_total')).toBe(1)
    expect(await metricTotal(rt, 'switchboard_mail_sent_total')).toBe(0)
    const text = await rt.metrics.metrics()
    expect(text).toMatch(/switchboard_mail_failures_total\{transport="smtp"\} 1/)
  })

  it('does not retry a permanent rejection (5xx)', async () => {
    smtp = await startSmtp({
      onRcptTo(address, _session, cb) {
        if (address.address === 'nobody@example.com') {
          const err = new Error('mailbox unavailable') as Error & { responseCode: number }
          err.responseCode = 550
          return cb(err)
        }
        cb()
      },
    })
    rt = await createTestRuntime({ dialect, env: { ...NO_PROVIDER, SMTP_URL: `smtp://127.0.0.1:${smtp.port}` } })
    const result = await sendMail(rt, { to: 'nobody@example.com', subject: 's', text: 't' }, liveEffects())
    expect(result.status).toBe('failed')
    expect(result.error).toMatch(/550/)
    expect((await listMailLog(rt))[0]).toMatchObject({ status: 'failed', attempts: 1 })
    expect(await metricTotal(rt, 'switchboard_mail_failures_total')).toBe(1)
  })

  it('in a dry run sends, writes and records nothing, and plans a mail effect', async () => {
    smtp = await startSmtp()
    rt = await createTestRuntime({ dialect, env: { ...NO_PROVIDER, SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, REPORT_TO: 'ops@example.com' } })
    await seedKnownDay(rt)
    const effects: Effects = { dryRun: true, plan: [] }
    const result = await sendDailyReport(rt, { date: DAY, timezone: TZ }, effects)
    expect(result.status).toBe('planned')
    expect(effects.plan).toEqual([{ kind: 'mail', to: ['ops@example.com'], subject: 'switchboard daily report — 2026-11-20 (Asia/Kolkata)', attachments: ['conversations-2026-11-20.csv'] }])
    expect(smtp.messages).toHaveLength(0)
    expect(await listMailLog(rt)).toEqual([])
    expect(existsSync(join(rt.dataDir, 'outbox'))).toBe(false)
  })

  it('refuses to send without a recipient, with one clear line', async () => {
    rt = await createTestRuntime({ dialect, env: NO_PROVIDER })
    await expect(sendDailyReport(rt, { date: DAY }, liveEffects())).rejects.toThrow('no recipient for the daily report: set REPORT_TO (or pass --to)')
  })
})
