import { expect, it } from 'vitest'
import { describeMailError } from '../../src/reports/mail-outbox.ts'

// `report send` with $DATA_DIR/outbox a plain file said `EEXIST: EEXIST: file already exists, mkdir …`.
it("says an error's code once: Node's messages start with it, a relay's reply does not", () => {
  expect(describeMailError(Object.assign(new Error("EEXIST: file already exists, mkdir '/data/outbox'"), { code: 'EEXIST' }))).toBe("EEXIST: file already exists, mkdir '/data/outbox'")
  expect(describeMailError(Object.assign(new Error('Message failed'), { code: 'EMESSAGE', response: '550 5.7.1 rejected as spam' }))).toBe('EMESSAGE: 550 5.7.1 rejected as spam')
  expect(describeMailError(new Error('Greeting never received'))).toBe('Greeting never received')
})

// A relay that quotes the credentials it refused (`535 bad credentials for user:password`) put SMTP_URL's password on
// the Mail page, in `mail list` and in the log: the outbox keeps the error without it.
it("keeps SMTP_URL's password out of the error, as written in the URL and decoded", () => {
  const url = 'smtp://reports:pa%24%24word-9@relay.example:587'
  const refused = Object.assign(new Error('Invalid login'), { code: 'EAUTH', response: '535 5.7.8 bad credentials for reports:pa$$word-9 (pa%24%24word-9)' })
  expect(describeMailError(refused, url)).toBe('EAUTH: 535 5.7.8 bad credentials for reports:[redacted] ([redacted])')
  expect(describeMailError(refused)).toContain('pa$$word-9')
})
