import type { AddressInfo } from 'node:net'
import { SMTPServer } from 'smtp-server'
import { afterEach, expect, it, vi } from 'vitest'
import { deliverDue, sendDailyReport } from '../../src/reports/index.ts'
import { MAIL_CLAIM_MS } from '../../src/reports/mail-outbox.ts'
import { liveEffects } from '../../src/effects.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { seedKnownDay } from './seed.ts'

/** A relay that takes the message's bytes and then sits on its answer until released (a slow relay, a huge attachment). */
async function startSlowSmtp() {
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  let received = 0
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, callback) {
      stream.resume()
      stream.on('end', () => {
        received++
        void released.then(() => callback())
      })
    },
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.server.address() as AddressInfo).port,
    received: () => received,
    release,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

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
})
