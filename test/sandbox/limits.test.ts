import { afterEach, describe, expect, it } from 'vitest'
import { GLOBEX, harness, phoneCall, type Harness } from './helpers.ts'
import { createNumberRateLimiter } from '../../src/sandbox/rate-limit.ts'

let h: Harness
afterEach(async () => h && (await h.sb.close()))

describe('limits', () => {
  it('sends X-RateLimit-* on every authenticated answer, errors included, and 429s past the quota until the window resets', async () => {
    h = harness({ rateLimit: 3 }) // clock starts at 20:53:30
    const answers = [await h.request('/v1/conversations'), await h.call('{bad'), await h.request('/v1/nowhere')]
    expect(answers.map((r) => r.status)).toEqual([200, 400, 404])
    expect(answers.map((r) => r.headers.get('x-ratelimit-remaining'))).toEqual(['2', '1', '0'])
    for (const r of answers) {
      expect(r.headers.get('x-ratelimit-limit')).toBe('3')
      expect(r.headers.get('x-ratelimit-reset')).toBe('2026-03-18T20:54:00+00:00')
    }
    const limited = await h.request('/v1/conversations')
    expect(limited.status).toBe(429)
    expect(limited.headers.get('retry-after')).toBe('30')
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0')
    expect((await h.json(limited)).error).toEqual({ message: 'rate limit exceeded', type: 'rate_limit_exceeded' })
    // Another key has its own quota.
    expect((await h.request('/v1/conversations', { key: GLOBEX })).status).toBe(200)
    await h.clock.advance(29_999)
    expect((await h.request('/v1/conversations')).status).toBe(429)
    await h.clock.advance(1)
    const fresh = await h.request('/v1/conversations')
    expect(fresh.status).toBe(200)
    expect(fresh.headers.get('x-ratelimit-reset')).toBe('2026-03-18T20:55:00+00:00')
  })

  it('limits calls per destination number over a sliding 10 minutes', async () => {
    h = harness({ numberLimit: 2 })
    expect((await h.call(phoneCall('+919876543210'))).status).toBe(200)
    await h.clock.advance(60_000)
    expect((await h.call(phoneCall('+919876543210'))).status).toBe(200)
    const limited = await h.call(phoneCall('+919876543210'))
    expect(limited.status).toBe(429)
    expect(await h.json(limited)).toEqual({ error: { message: 'rate limit exceeded for this number', type: 'rate_limit_exceeded' } })
    expect(limited.headers.get('retry-after')).toBe('540')
    expect(limited.headers.get('x-ratelimit-limit')).toBe('600')
    expect((await h.call(phoneCall('+919876543211'))).status).toBe(200) // another number
    expect((await h.call(phoneCall('+919876543210'), GLOBEX)).status).toBe(404) // agent 101 is not globex's
    await h.clock.advance(540_000)
    expect((await h.call(phoneCall('+919876543210'))).status).toBe(200)
  })

  it('counts one destination however its international prefix is written (+, 00, or digits alone)', async () => {
    h = harness({ numberLimit: 2 })
    expect((await h.call(phoneCall('+919876543210'))).status).toBe(200)
    expect((await h.call(phoneCall('00919876543210'))).status).toBe(200)
    for (const spelling of ['919876543210', '+91 98765-43210', '0091 98765 43210', '+919876543210']) {
      expect((await h.call(phoneCall(spelling))).status, spelling).toBe(429)
    }
    // A national form is another destination to a sandbox that knows no default country.
    expect((await h.call(phoneCall('09876543210'))).status).toBe(200)
  })

  it('refuses the (maxCalls+1)th simultaneous call with current_calls/max_calls inside error', async () => {
    h = harness({ maxCalls: 10 })
    for (let i = 0; i < 10; i++) expect((await h.call(phoneCall(`+91987654${String(i).padStart(4, '0')}`))).status).toBe(200)
    const res = await h.call(phoneCall('+919999999990'))
    expect(res.status).toBe(429)
    expect(await h.json(res)).toEqual({
      error: {
        message: 'concurrent call limit reached. 10 simultaneous calls allowed.',
        type: 'concurrent_call_limit_exceeded',
        current_calls: 10,
        max_calls: 10,
      },
    })
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    // Other workspaces are not affected; scheduled calls do not take a slot.
    expect((await h.call(phoneCall('+911', {}, 201), GLOBEX)).status).toBe(200)
    expect((await h.call(phoneCall('+912', { scheduled_for: new Date(h.clock.now() + 3600_000).toISOString() }))).status).toBe(200)
    await h.clock.advance(Number(res.headers.get('retry-after')) * 1000)
    expect((await h.call(phoneCall('+919999999990'))).status).toBe(200)
  })

  it.each([
    ['limit=0', 'limit must be an integer from 1 to 100'],
    ['limit=101', 'limit must be an integer from 1 to 100'],
    ['limit=abc', 'limit must be an integer from 1 to 100'],
    ['limit=2.5', 'limit must be an integer from 1 to 100'],
    ['offset=-1', 'offset must be a non-negative integer'],
    ['offset=x', 'offset must be a non-negative integer'],
    ['agent_id=abc', 'agent_id must be an integer'],
  ])('rejects ?%s on both lists', async (query, message) => {
    h = harness()
    for (const path of ['/v1/conversations', '/v1/batch-calls']) {
      const res = await h.request(`${path}?${query}`)
      expect(res.status).toBe(400)
      expect((await h.json(res)).error).toEqual({ message, type: 'invalid_request' })
    }
  })

  it('accepts page sizes 1 and 100 and defaults to 20', async () => {
    h = harness()
    h.sb.seedConversations({ apiKey: 'sk_test_acme', agentId: 101, count: 150 })
    expect((await h.json(await h.request('/v1/conversations'))).data).toHaveLength(20)
    expect((await h.json(await h.request('/v1/conversations?limit=1'))).data).toHaveLength(1)
    expect((await h.json(await h.request('/v1/conversations?limit=100'))).data).toHaveLength(100)
  })

  it('adds injected latency to every answer', async () => {
    h = harness({ faults: { webhookDuplicate: 0, webhookDrop: 0, webhookReorder: 0, upstream500: 0, upstream500After: 0, latencyMs: 250 } })
    let done = false
    const pending = h.request('/v1/conversations').then((r) => ((done = true), r))
    await h.clock.advance(249)
    expect(done).toBe(false)
    await h.clock.advance(1)
    expect((await pending).status).toBe(200)
  })
})

describe('the per-number limiter over a long run', () => {
  it('forgets numbers not called within its window, so a sandbox calling many numbers once does not grow', () => {
    const limiter = createNumberRateLimiter(3, 10 * 60_000)
    let now = Date.UTC(2026, 10, 25)
    for (let i = 0; i < 999; i++) limiter.record(`+9198765${String(i).padStart(5, '0')}`, now)
    expect(limiter.tracked()).toBe(999)
    now += 10 * 60_000 + 1
    // The next record sweeps: only the number just called is left.
    limiter.record('+919999999999', now)
    expect(limiter.tracked()).toBe(1)
    // A number still inside its window keeps counting toward its limit.
    for (let i = 0; i < 3; i++) limiter.record('+919999999999', now + i)
    expect(limiter.retryAfter('+919999999999', now + 10)).toBeGreaterThan(0)
  })
})
