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
