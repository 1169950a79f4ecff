import { describe, expect, it } from 'vitest'
import { asksNotToCall } from '../../src/campaigns/dnc.ts'

/** What an agent's results may say to ask not to be called again, in the forms agents really write it. */
describe('asksNotToCall', () => {
  it.each([
    [{ do_not_call: true }],
    [{ doNotCall: true }],
    [{ DoNotCall: 'yes' }],
    [{ optedOut: 1 }],
    [{ opted_out: 'true' }],
    [{ unsubscribed: true }],
    [{ intent: 'do_not_call' }],
    [{ intent: "Don't call" }],
    [{ intent: 'Don’t call me again' }],
    [{ outcome: 'Customer opted out' }],
    [{ disposition: 'unsubscribed' }],
    [{ intent: 'STOP' }],
    [{ customerIntent: 'remove me from your list' }],
    [{ intent: ['interested', 'do-not-contact'] }],
  ])('%j asks not to be called', (results) => {
    expect(asksNotToCall(results)).toBe(true)
  })

  it.each([
    [{ intent: 'paid' }],
    [{ intent: 'callback_tomorrow' }],
    [{ do_not_call: false }],
    [{ doNotCall: 'no' }],
    [{ notes: "don't call before 10" }],
    [{ outcome: 'bus stop' }],
    [{ status: 'stopped' }],
    [{}],
  ])('%j does not', (results) => {
    expect(asksNotToCall(results)).toBe(false)
  })
})
