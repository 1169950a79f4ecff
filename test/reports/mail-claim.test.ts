import { sql } from 'kysely'
import { afterEach, expect, it, vi } from 'vitest'
import { deliverDue, sendDailyReport } from '../../src/reports/index.ts'
import { MAIL_CLAIM_MS } from '../../src/reports/mail-outbox.ts'
import { liveEffects } from '../../src/effects.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { seedKnownDay } from './seed.ts'
import { startSlowSmtp } from './smtp.ts'

describeEachDialect('mail outbox claims', (dialect) => {
  let rt: TestRuntime | undefined
  let smtp: Awaited<ReturnType<typeof startSlowSmtp>> | undefined
  afterEach(async () => {
    smtp?.release()
    await rt?.close()
    await smtp?.close()
    rt = smtp = undefined
  })

  // The claim is renewed while the relay is talked to: an attempt that outlasts one claim is not taken for a dead one
  // by the outbox of this or another replica, which sent the report a second time.
  it('a send that outlasts its claim keeps it: nobody else sends the message again meanwhile', async () => {
    smtp = await startSlowSmtp()
    const clock = createManualClock('2026-11-21T02:30:00Z')
    rt = await createTestRuntime({ dialect, clock, env: { VOICE_API_KEY: 'sk_live_report', VOICE_API_BASE_URL: 'http://127.0.0.1:9', SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, REPORT_TO: 'ops@example.com' } })
    await seedKnownDay(rt)
    const first = sendDailyReport(rt, {}, liveEffects())
    await vi.waitFor(() => expect(smtp!.received()).toBe(1), { timeout: 10_000 })
    // Three claims' worth of time in steps, each letting a renewal land.
    for (let waited = 0; waited < 3 * MAIL_CLAIM_MS; waited += MAIL_CLAIM_MS / 6) {
      await clock.advance(MAIL_CLAIM_MS / 6)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(await deliverDue(rt, 'another-replica')).toEqual([])
    smtp.release()
    expect(await first).toMatchObject({ status: 'sent' })
    expect(smtp.received()).toBe(1)
  })

  // The relay has the message; only the row's claim keeps the outbox from sending it again until the row says so.
  it('a mail the relay took while the database refused its record is recorded once it takes it: nobody gets a second copy', async () => {
    smtp = await startSlowSmtp()
    const clock = createManualClock('2026-11-21T02:30:00Z')
    const logs = captureLogs('warn')
    rt = await createTestRuntime({ dialect, clock, log: logs.log, env: { VOICE_API_KEY: 'sk_live_report', VOICE_API_BASE_URL: 'http://127.0.0.1:9', SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, REPORT_TO: 'ops@example.com' } })
    await seedKnownDay(rt)
    let ended = false
    const first = sendDailyReport(rt, {}, liveEffects()).finally(() => (ended = true))
    await vi.waitFor(() => expect(smtp!.received()).toBe(1), { timeout: 10_000 })
    // The database stops taking the outbox's writes as the relay answers (its table gone for a moment, either dialect).
    await sql`alter table mail_log rename to mail_log_away`.execute(rt.store.db)
    smtp.release()
    // Recording the send has failed once (or, had it not been tried again, the send has ended).
    await vi.waitFor(() => expect(ended || logs.find(/^the relay took the mail but recording it failed/).length > 0).toBe(true))
    await sql`alter table mail_log_away rename to mail_log`.execute(rt.store.db)
    await clock.advance(2_000)
    expect(await first).toMatchObject({ status: 'sent' })
    // Past the claim's life: the outbox finds nothing to send again.
    await clock.advance(2 * MAIL_CLAIM_MS)
    expect(await deliverDue(rt, 'another-replica')).toEqual([])
    expect(smtp.received()).toBe(1)
    expect(logs.find(/^the relay took the mail but recording it failed; trying again while its claim holds$/)).toHaveLength(1)
  })
})
