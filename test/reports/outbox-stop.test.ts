import { afterEach, expect, it, vi } from 'vitest'
import { startMailOutbox } from '../../src/reports/index.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { startSlowSmtp } from './smtp.ts'

/**
 * A relay gets minutes to answer the end of a message (src/reports/mail-transport.ts), and stopping `serve` waited for
 * the send in flight: a relay that took the message and never answered held the stop for all that time. A stop waits
 * 30 s for it, then says so and goes on; the message's claim lapses and the next start tries it again.
 */
let rt: TestRuntime | undefined
let closeRelay: (() => Promise<void>) | undefined
afterEach(async () => {
  await rt?.close()
  await closeRelay?.()
  rt = closeRelay = undefined
})

it('a stop waits 30 s for a relay that has the message and does not answer, then says so', async () => {
  // A relay that takes the whole message and never answers its end (until the test is over).
  const relay = await startSlowSmtp()
  closeRelay = async () => {
    relay.release()
    await relay.close()
  }
  const clock = createManualClock('2026-11-20T09:00:00Z')
  const capture = captureLogs('warn')
  rt = await createTestRuntime({ clock, log: capture.log, env: { SMTP_URL: `smtp://127.0.0.1:${relay.port}`, MAIL_FROM: 'reports@switchboard.test' } })
  const now = clock.now()
  await rt.store.db.insertInto('mail_log').values({
    id: 'mail_1', message_id: '<m1@switchboard.test>', recipients: 'ops@example.com', subject: 'Daily report', status: 'queued', attempts: 0, error: null,
    created_at: now, updated_at: now, raw: 'From: reports@switchboard.test\r\nTo: ops@example.com\r\nSubject: Daily report\r\n\r\nHello\r\n', next_attempt_at: now, claimed_by: null, claimed_until: null,
  }).execute()
  const stop = startMailOutbox(rt)
  await clock.advance(1_000)
  await vi.waitFor(() => expect(relay.received()).toBe(1), { timeout: 10_000, interval: 10 })

  let stopped = false
  const stopping = stop().then(() => (stopped = true))
  await clock.advance(29_000)
  expect(stopped).toBe(false)
  await clock.advance(1_000)
  await stopping
  expect(capture.find(/^stopping while a mail is still with the relay/)).toHaveLength(1)
  // Still claimed by the send that was cut short: its claim lapses, and the next start tries it again.
  expect(await rt.store.db.selectFrom('mail_log').select(['status', 'claimed_by']).where('id', '=', 'mail_1').executeTakeFirst()).toMatchObject({ status: 'queued', claimed_by: expect.any(String) })
})

// What another process queued for its relay (`report send` with its own SMTP_URL) waited in a service with no SMTP_URL
// without a word, and past the day after which queued mail is given up.
it('a service with no SMTP_URL says at start that mail waits in the outbox for a relay', async () => {
  const capture = captureLogs('info')
  rt = await createTestRuntime({ log: capture.log, clock: createManualClock('2026-03-01T06:00:00Z') })
  expect(rt.config.mail.smtpUrl).toBeUndefined()
  const now = rt.clock.now()
  for (const id of ['mail_1', 'mail_2']) {
    await rt.store.db.insertInto('mail_log').values({
      id, message_id: `<${id}@switchboard.test>`, recipients: 'ops@example.com', subject: 'Daily report', status: 'queued', attempts: 1, error: 'ECONNREFUSED',
      created_at: now, updated_at: now, raw: 'Subject: x\r\n\r\nHello\r\n', next_attempt_at: now, claimed_by: null, claimed_until: null,
    }).execute()
  }
  const stop = startMailOutbox(rt)
  await vi.waitFor(() => expect(capture.find(/wait in the outbox for an SMTP relay, but this service has no SMTP_URL/)).toHaveLength(1), { timeout: 5_000, interval: 10 })
  expect(capture.find(/no SMTP_URL/)[0]).toMatchObject({ level: 40, queued: 2, msg: '2 mail messages wait in the outbox for an SMTP relay, but this service has no SMTP_URL: nothing is sent until it is set (mail list --status queued shows them)' })
  await stop()
})
