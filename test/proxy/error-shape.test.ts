import { expect, it } from 'vitest'
import { CACHE_TTL_MS } from '../../src/proxy/cache-policy.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { phoneCall, withClock } from './helpers.ts'
import { type ScriptedUpstream } from './scripted-upstream.ts'
import { harnessPerTest } from './harness-per-test.ts'

const GATEWAY_PAGE = '<html><body>Service Unavailable at 10.0.0.5 nginx/1.2</body></html>'
const NO_BODY_503 = { error: { message: 'HTTP 503 with no error body', type: 'internal_error' } }

/** Every error the proxy passes on is in the provider's shape, whatever the provider (or a gateway before it) sent. */
describeEachDialect('proxy: error answers in the provider shape', (dialect) => {
  const { scripted } = harnessPerTest(dialect)

  /** The provider answers `path` (any path when omitted) with this status, type and body; the rest goes to the sandbox. */
  const answerWith = (up: ScriptedUpstream, status: number, type: string, body: string, headers: Record<string, string> = {}, path?: RegExp) =>
    up.answer((req, _body, res) => {
      if (path && !path.test(req.url ?? '')) return false
      res.writeHead(status, { 'content-type': type, ...headers })
      res.end(body)
    })

  const gatewayDown = { 'retry-after': '30', 'x-ratelimit-limit': '600', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '2026-03-18T20:54:30Z' }

  const expectShaped = async (res: Response, status: number, cache: string, body: unknown = NO_BODY_503) => {
    expect(res.status).toBe(status)
    expect(res.headers.get('content-type')).toBe('application/json')
    expect(res.headers.get('x-cache')).toBe(cache)
    const text = await res.text()
    expect(text).not.toContain('10.0.0.5')
    expect(JSON.parse(text)).toEqual(body)
  }

  const expectBackOffKept = (res: Response) => {
    expect(res.headers.get('retry-after')).toBe('30')
    expect(res.headers.get('x-ratelimit-limit')).toBe('600')
    expect(res.headers.get('x-ratelimit-remaining')).toBe('0')
    expect(res.headers.get('x-ratelimit-reset')).toBe('2026-03-18T20:54:30Z')
  }

  it('a read answered 503 with a gateway HTML page comes back in the error shape, same status, its back-off kept', async () => {
    const { h, up } = await scripted()
    answerWith(up, 503, 'text/html', GATEWAY_PAGE, gatewayDown)
    const res = await h.request('/v1/conversations?limit=3')
    expectBackOffKept(res)
    await expectShaped(res, 503, 'MISS')
    // HEAD gets the same headers, no body.
    const head = await h.request('/v1/conversations?limit=3', { method: 'HEAD' })
    expect(head.status).toBe(503)
    expect(head.headers.get('content-type')).toBe('application/json')
    expect(await head.text()).toBe('')
    // A JSON error that is not the provider's shape (a gateway's own) is reshaped too; the provider's passes as sent.
    answerWith(up, 502, 'application/json', '{"error":"upstream connect error"}')
    await expectShaped(await h.request('/v1/batch-calls'), 502, 'MISS', { error: { message: 'HTTP 502 with no error body', type: 'internal_error' } })
    const own = '{"error": {"message": "limit must be at most 100", "type": "invalid_request", "param": "limit"}}'
    answerWith(up, 400, 'application/json', own)
    const passed = await h.request('/v1/conversations?limit=1000')
    expect(passed.status).toBe(400)
    expect(await passed.text()).toBe(own)
  })

  it('a 404 HTML page on a conversation is typed not_found; a 405 keeps its Allow', async () => {
    const { h, up } = await scripted()
    answerWith(up, 404, 'text/html', '<html><body>404 Not Found</body></html>')
    await expectShaped(await h.request('/v1/conversations/conv_missing'), 404, 'MISS', { error: { message: 'HTTP 404 with no error body', type: 'not_found' } })
    answerWith(up, 405, 'text/html', '<html>405</html>', { allow: 'GET, HEAD' })
    const res = await h.request('/v1/agents')
    expect(res.headers.get('allow')).toBe('GET, HEAD')
    await expectShaped(res, 405, 'BYPASS', { error: { message: 'HTTP 405 with no error body', type: 'invalid_request' } })
  })

  it('an upload answered 503 with a gateway HTML page comes back in the error shape, its back-off kept (BYPASS)', async () => {
    const { h, up } = await scripted()
    answerWith(up, 503, 'text/html', GATEWAY_PAGE, gatewayDown)
    const form = new FormData()
    form.set('agent_id', '101')
    form.set('name', 'spring')
    form.set('file', new Blob(['customer_phone\n+919876543210\n'], { type: 'text/csv' }), 'leads.csv')
    const res = await h.request('/v1/batch-call', { method: 'POST', body: form })
    expectBackOffKept(res)
    expect(res.headers.get('content-length')).not.toBe(String(GATEWAY_PAGE.length))
    await expectShaped(res, 503, 'BYPASS')
    expect(up.count('POST', '/v1/batch-call')).toBe(1)
    // A path the proxy does not model, and a recording by a query, are passed through the same way.
    await expectShaped(await h.request('/v1/agents'), 503, 'BYPASS')
    await expectShaped(await h.request('/v1/conversations/conv_1/recording?format=mp3'), 503, 'BYPASS')
  })

  it('a recording answered 503 with a gateway HTML page comes back in the error shape', async () => {
    const { h, up } = await scripted()
    answerWith(up, 503, 'text/html', GATEWAY_PAGE, gatewayDown)
    const res = await h.request('/v1/conversations/conv_1/recording')
    expectBackOffKept(res)
    await expectShaped(res, 503, 'MISS')
  })

  it('POST /v1/call: a JSON error body that is not the provider shape is reshaped too', async () => {
    const { h, up } = await scripted()
    answerWith(up, 400, 'application/json', '{"error":"bad gateway config"}')
    const res = await withClock(h.clock, h.call(phoneCall('+919876543210')))
    await expectShaped(res, 400, 'BYPASS', { error: { message: 'HTTP 400 with no error body', type: 'invalid_request' } })
  })

  it('a read answered 200 with cut-off JSON is a 502 in the error shape, never cached; STALE when a copy is kept', async () => {
    const { h, up } = await scripted()
    answerWith(up, 200, 'application/json', '{"data":', { 'x-ratelimit-remaining': '41' })
    const res = await h.request('/v1/conversations?limit=3')
    expect(res.headers.get('x-ratelimit-remaining')).toBe('41')
    await expectShaped(res, 502, 'MISS', { error: { message: "the provider's answer (HTTP 200) is not valid JSON", type: 'internal_error' } })
    // Not kept: the next read asks again, and this time the answer is kept.
    const good = '{"data":[],"has_more":false,"total":0}'
    answerWith(up, 200, 'application/json', good)
    const next = await h.request('/v1/conversations?limit=3')
    expect(next.status).toBe(200)
    expect(next.headers.get('x-cache')).toBe('MISS')
    expect(await next.text()).toBe(good)
    expect(up.count('GET', '/v1/conversations?limit=3')).toBe(2)
    expect((await h.request('/v1/conversations?limit=3')).headers.get('x-cache')).toBe('HIT')
    // Once expired, a cut-off answer is a provider failing: the kept copy is served STALE.
    await h.clock.advance(CACHE_TTL_MS.list + 1)
    answerWith(up, 200, 'application/json', '{"data":[{"conv')
    const stale = await h.request('/v1/conversations?limit=3')
    expect(stale.status).toBe(200)
    expect(stale.headers.get('x-cache')).toBe('STALE')
    expect(await stale.text()).toBe(good)
  })
})
