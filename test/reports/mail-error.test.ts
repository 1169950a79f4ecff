import { expect, it } from 'vitest'
import { describeMailError } from '../../src/reports/mail-outbox.ts'

// `report send` with $DATA_DIR/outbox a plain file said `EEXIST: EEXIST: file already exists, mkdir …`.
it("says an error's code once: Node's messages start with it, a relay's reply does not", () => {
  expect(describeMailError(Object.assign(new Error("EEXIST: file already exists, mkdir '/data/outbox'"), { code: 'EEXIST' }))).toBe("EEXIST: file already exists, mkdir '/data/outbox'")
  expect(describeMailError(Object.assign(new Error('Message failed'), { code: 'EMESSAGE', response: '550 5.7.1 rejected as spam' }))).toBe('EMESSAGE: 550 5.7.1 rejected as spam')
  expect(describeMailError(new Error('Greeting never received'))).toBe('Greeting never received')
})
