import { describe, expect, it } from 'vitest'
import { errorFromResponse, readRateLimit, VoiceApiError } from '../../src/upstream/errors.ts'
import { defaultRetryPolicy, retryDelay } from '../../src/upstream/retry.ts'
import { createSeededRandom } from '../../src/utils/random.ts'

const now = Date.parse('2026-03-18T20:53:00Z')
/** An error answer with these headers (`reset` X-RateLimit-Reset, `retryAfter` Retry-After), read at `now` as the client reads it. */
const err = (status: number, type: string, sent: { reset?: string; retryAfter?: number; date?: string } = {}) =>
  new VoiceApiError({
    status,
    type: type as VoiceApiError['type'],
    message: type,
    rateLimit: readRateLimit(new Headers({
      ...(sent.reset !== undefined ? { 'x-ratelimit-reset': sent.reset } : {}),
      ...(sent.retryAfter !== undefined ? { 'retry-after': String(sent.retryAfter) } : {}),
      ...(sent.date !== undefined ? { date: sent.date } : {}),
    }), now),
  })
const delay = (error: VoiceApiError, opts: { attempt?: number; repeatable?: boolean } = {}) =>
  retryDelay({ error, attempt: opts.attempt ?? 1, repeatable: opts.repeatable ?? true, policy: defaultRetryPolicy, random: createSeededRandom(7), now })

describe('retry rules (spec → Errors → client retry rules)', () => {
  it.each([
    [400, 'invalid_request'],
    [401, 'authentication_error'],
    [404, 'not_found'],
    [409, 'duplicate_request'],
  ])('never retries %i %s', (status, type) => {
    expect(delay(err(status, type))).toBeUndefined()
  })

  it('retries a 429 only after Retry-After', () => {
    expect(delay(err(429, 'rate_limit_exceeded', { retryAfter: 3 }))).toBe(3000)
  })

  it('falls back to X-RateLimit-Reset (ISO with offset) when there is no Retry-After', () => {
    expect(delay(err(429, 'rate_limit_exceeded', { reset: '2026-03-18T20:54:00+00:00' }))).toBe(60_000)
    expect(delay(err(429, 'rate_limit_exceeded', { reset: '2026-03-19T02:24:00+05:30' }))).toBe(60_000)
  })

  it('reads X-RateLimit-Reset strictly: a value that is not an ISO timestamp with an offset is no reset at all', () => {
    // Z, an offset without a colon and fractions are the same instant.
    for (const reset of ['2026-03-18T20:54:00Z', '2026-03-19T02:24:00+0530', '2026-03-18T20:54:00.000+00:00']) {
      expect(delay(err(429, 'rate_limit_exceeded', { reset }))).toBe(60_000)
    }
    // Date.parse reads "60" as 1960 and "1.5" / "-1" as 2001 (a wait of 0: asked again at once), "9999" as the year
    // 9999; a date without a time or offset, or out of range, is no better.
    for (const reset of ['60', '1.5', '-1', '9999', '2026-03-18', '2026-03-18T20:54:00', '2026-02-31T20:54:00Z', '2026-03-18T25:00:00Z', 'soon']) {
      expect(delay(err(429, 'rate_limit_exceeded', { reset })), reset).toBeUndefined()
    }
  })

  it("reads X-RateLimit-Reset on the provider's clock, as its Date header tells it: this machine's clock 10 minutes off either way waits the same minute", () => {
    // The provider's clock 10 minutes ahead of this machine's (this one behind): its reset is 60 s after its own Date.
    expect(delay(err(429, 'rate_limit_exceeded', { reset: '2026-03-18T21:04:00+00:00', date: 'Wed, 18 Mar 2026 21:03:00 GMT' }))).toBe(60_000)
    // 10 minutes behind (this machine ahead): without the Date the reset read as long past, and the 429 as no time given.
    expect(delay(err(429, 'rate_limit_exceeded', { reset: '2026-03-18T20:44:00+00:00', date: 'Wed, 18 Mar 2026 20:43:00 GMT' }))).toBe(60_000)
    expect(delay(err(429, 'rate_limit_exceeded', { reset: '2026-03-18T20:44:00+00:00' }))).toBe(0)
    // A Date within 2 s is the header's whole seconds and the way back, not a clock apart; an invalid Date is no Date.
    expect(delay(err(429, 'rate_limit_exceeded', { reset: '2026-03-18T20:54:00+00:00', date: 'Wed, 18 Mar 2026 20:52:59 GMT' }))).toBe(60_000)
    expect(delay(err(429, 'rate_limit_exceeded', { reset: '2026-03-18T20:54:00+00:00', date: '18 Mar 2026 21:03:00' }))).toBe(60_000)
    // A Retry-After date is the provider's instant too.
    expect(err(429, 'rate_limit_exceeded', { date: 'Wed, 18 Mar 2026 21:03:00 GMT' }).rateLimit.resetAt).toBeUndefined()
    const dated = readRateLimit(new Headers({ 'retry-after': 'Wed, 18 Mar 2026 21:03:30 GMT', date: 'Wed, 18 Mar 2026 21:03:00 GMT' }), now)
    expect(dated.retryAfter).toBe(30)
  })

  it('types an error answer without the provider\'s body by its status, as the proxy does', () => {
    const headers = new Headers({ 'content-type': 'text/html' })
    expect(errorFromResponse(401, headers, '<html>401</html>', 0)).toMatchObject({ type: 'authentication_error', status: 401 })
    expect(errorFromResponse(409, headers, '', 0)).toMatchObject({ type: 'duplicate_request', status: 409 })
    expect(errorFromResponse(502, headers, '<html>bad gateway</html>', 0)).toMatchObject({ type: 'internal_error', status: 502 })
  })

  it('does not retry a 429 that gives no time, or one longer than the policy allows', () => {
    expect(delay(err(429, 'concurrent_call_limit_exceeded'))).toBeUndefined()
    expect(delay(err(429, 'rate_limit_exceeded', { retryAfter: 3600 }))).toBeUndefined()
  })

  it('backs off exponentially with full jitter on 5xx and network errors, within the cap', () => {
    for (let attempt = 1; attempt <= defaultRetryPolicy.retries; attempt++) {
      const ceiling = Math.min(defaultRetryPolicy.maxDelayMs, defaultRetryPolicy.baseDelayMs * 2 ** (attempt - 1))
      for (const e of [err(500, 'internal_error'), err(503, 'internal_error'), err(0, 'network_error'), err(0, 'timeout')]) {
        const d = delay(e, { attempt })!
        expect(d).toBeGreaterThanOrEqual(0)
        expect(d).toBeLessThanOrEqual(ceiling)
      }
    }
    expect(delay(err(500, 'internal_error'), { attempt: defaultRetryPolicy.retries + 1 })).toBeUndefined()
  })

  it('does not repeat a non-repeatable request (call creation without a key, uploads) on 5xx', () => {
    expect(delay(err(500, 'internal_error'), { repeatable: false })).toBeUndefined()
    expect(delay(err(0, 'network_error'), { repeatable: false })).toBeUndefined()
    // A 429 was not processed, so waiting for it is safe even then.
    expect(delay(err(429, 'rate_limit_exceeded', { retryAfter: 1 }), { repeatable: false })).toBe(1000)
  })
})

describe('Retry-After as the provider sends it', () => {
  it('is whole seconds, or an HTTP-date (a gateway in front of the provider) read as the seconds until it; anything else is no value', () => {
    const now = Date.UTC(1994, 10, 6, 8, 47, 37, 500)
    const read = (value: string) => readRateLimit(new Headers({ 'retry-after': value }), now).retryAfter
    expect(read('30')).toBe(30)
    expect(read(' 0 ')).toBe(0)
    // 119.5 s ahead: waited in whole seconds, rounded up (never sooner than asked); a date already past is no wait.
    expect(read('Sun, 06 Nov 1994 08:49:37 GMT')).toBe(120)
    expect(read('Sunday, 06-Nov-94 08:49:37 GMT')).toBe(120)
    expect(read('Sun, 06 Nov 1994 08:40:00 GMT')).toBe(0)
    for (const bad of ['-1', '1.5', '1e3', '0x10', 'Sun, 06 Nov 1994 8:49:37 GMT', '1994-11-06T08:49:37Z', '']) expect(read(bad)).toBeUndefined()
  })
})
