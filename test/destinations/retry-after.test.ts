import { describe, expect, it } from 'vitest'
import { destinationSchema } from '../../src/config/destinations.ts'
import { MAX_RETRY_AFTER_MS } from '../../src/destinations/backoff.ts'
import { classify } from '../../src/destinations/outcome.ts'
import { DEST_SECRET } from './helpers.ts'

/**
 * What a 429/503's Retry-After does to the next attempt: read strictly (RFC 9110 §10.2.3), it can lengthen the
 * scheduled wait but never shorten it. No jitter here (random 0.5), so the scheduled wait is exactly a minute.
 */
const destination = destinationSchema.parse({ name: 'crm', url: 'https://crm.example.com/hooks', secret: DEST_SECRET, retryScheduleMs: [60_000, 60_000] })
const NOW = Date.parse('2026-03-01T16:30:00Z')
const SCHEDULED = 60_000

function waitAfter(status: number, retryAfter: string | undefined, date?: string): number {
  const sent = { status, latencyMs: 3, response: '', ...(retryAfter === undefined ? {} : { retryAfter }), ...(date === undefined ? {} : { date }) }
  const outcome = classify(destination, 0, sent, NOW, () => 0.5)
  expect(outcome.result).toBe('retry')
  return outcome.nextAttemptAt - NOW
}

describe('Retry-After on a failed delivery', () => {
  it('lengthens the scheduled wait, as seconds or as an HTTP-date in any of its three forms', () => {
    expect(waitAfter(503, '120')).toBe(120_000)
    expect(waitAfter(429, ' 300 ')).toBe(300_000)
    expect(waitAfter(503, 'Sun, 01 Mar 2026 16:35:00 GMT')).toBe(300_000)
    expect(waitAfter(503, 'Sunday, 01-Mar-26 16:35:00 GMT')).toBe(300_000)
    expect(waitAfter(503, 'Sun Mar  1 16:35:00 2026')).toBe(300_000)
    // Capped: a sink cannot park a delivery for a week.
    expect(waitAfter(503, '604800')).toBe(MAX_RETRY_AFTER_MS)
  })

  it('never shortens it: 0, a date already past, or a wait under the schedule leave the schedule', () => {
    for (const value of ['0', '30', 'Thu, 01 Jan 1970 00:00:00 GMT', 'Sun, 01 Mar 2026 16:30:30 GMT', 'Monday, 01-Mar-77 16:35:00 GMT']) expect(waitAfter(503, value), value).toBe(SCHEDULED)
  })

  it('reads a date on the destination\'s clock, by its Date header; a Date within two seconds, or not a date, changes nothing', () => {
    // The destination's clock 10 minutes ahead (16:40) or behind (16:20); its Retry-After five minutes from its now.
    expect(waitAfter(503, 'Sun, 01 Mar 2026 16:45:00 GMT', 'Sun, 01 Mar 2026 16:40:00 GMT')).toBe(300_000)
    expect(waitAfter(503, 'Sun, 01 Mar 2026 16:25:00 GMT', 'Sun, 01 Mar 2026 16:20:00 GMT')).toBe(300_000)
    // Seconds are a wait, whatever the clocks.
    expect(waitAfter(503, '300', 'Sun, 01 Mar 2026 16:40:00 GMT')).toBe(300_000)
    expect(waitAfter(503, 'Sun, 01 Mar 2026 16:35:00 GMT', 'Sun, 01 Mar 2026 16:30:01 GMT')).toBe(300_000)
    expect(waitAfter(503, 'Sun, 01 Mar 2026 16:35:00 GMT', 'yesterday')).toBe(300_000)
  })

  it('ignores what is not a Retry-After (V8 reads most of these as dates in 2001), and other statuses\' header', () => {
    const junk = ['1.5', '-1', '10, 20', '+5', '1e3', '0x10', '', 'soon', '2026-03-01T16:35:00Z', 'Sun, 01 Mar 2026 16:35:00', 'sun, 01 mar 2026 16:35:00 GMT', 'Sun, 1 Mar 2026 16:35:00 GMT', 'Sun, 31 Feb 2026 16:35:00 GMT', 'Sun, 01 Mar 2026 24:35:00 GMT', 'Sun, 01 Mar 2026 16:35:00 GMT x']
    for (const value of junk) expect(waitAfter(503, value), JSON.stringify(value)).toBe(SCHEDULED)
    expect(waitAfter(503, undefined)).toBe(SCHEDULED)
    expect(waitAfter(500, '120')).toBe(SCHEDULED)
  })
})
