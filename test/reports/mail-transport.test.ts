import { expect, it } from 'vitest'
import { loadConfig } from '../../src/config/load.ts'
import { createMailTransport, SMTP_REPLY_TIMEOUT_MS } from '../../src/reports/mail-transport.ts'

/**
 * A relay that scans a report before it answers the end of the message took it and queued it, but answered after the
 * 60 s the transport waited: the attempt counted as failed, and the next one mailed the report again. Once a relay has
 * greeted, it gets RFC 5321's 10 minutes (§4.5.3.2.6) to answer; one that is down or never greets still fails the
 * attempt in seconds (test/reports/mail.test.ts has a relay down; timing real sockets for minutes has no place here).
 */
it("waits RFC 5321's 10 minutes for a relay's reply once it has greeted, and 10 s for the connection and the greeting", () => {
  const config = loadConfig({ env: { SMTP_URL: 'smtp://127.0.0.1:2525', MAIL_FROM: 'reports@example.com', WEBHOOK_SECRET: 'whsec_dGVzdHNlY3JldHRlc3RzZWNyZXQ=' } })
  const { kind, transporter } = createMailTransport(config)
  expect(kind).toBe('smtp')
  expect(SMTP_REPLY_TIMEOUT_MS).toBe(600_000)
  expect((transporter as unknown as { options: Record<string, unknown> }).options).toMatchObject({ connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 600_000 })
  transporter.close()
})
