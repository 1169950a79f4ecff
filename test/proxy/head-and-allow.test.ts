import { expect, it } from 'vitest'
import { describeEachDialect } from '../helpers/db.ts'
import { harnessPerTest } from './harness-per-test.ts'

const LIST = '/v1/conversations?limit=3'

/** HEAD is served wherever GET is (RFC 9110 §9.3.2): same headers, no body, and the 405s say so in Allow (§15.5.6). */
describeEachDialect('proxy: HEAD and Allow', (dialect) => {
  const { scripted, sandboxOnly } = harnessPerTest(dialect)

  it('a 405 on a path the proxy reads lists HEAD with GET in Allow, as the sandbox\'s does', async () => {
    const h = await sandboxOnly()
    for (const [method, path, allow] of [
      ['DELETE', '/v1/conversations', 'GET, HEAD'],
      ['POST', '/v1/conversations/conv_1', 'GET, HEAD'],
      ['PUT', '/v1/batch-calls/7/metrics', 'GET, HEAD'],
      ['PUT', '/v1/call', 'POST'],
    ] as const) {
      const res = await h.request(path, { method })
      expect(res.status, `${method} ${path}`).toBe(405)
      expect(res.headers.get('allow'), `${method} ${path}`).toBe(allow)
      expect(res.headers.get('x-cache')).toBe('BYPASS')
      // Each method it names works on that path: HEAD as GET does.
      if (allow.includes('HEAD')) expect((await h.request(path, { method: 'HEAD' })).status, path).not.toBe(405)
    }
  })

  it('a provider\'s 405 that names GET alone on a path the proxy reads: the proxy answers HEAD there, so its Allow names it', async () => {
    const { h, up } = await scripted()
    up.answer((req, _body, res) => {
      res.writeHead(405, { 'content-type': 'application/json', allow: 'GET' })
      res.end(JSON.stringify({ error: { message: `method ${req.method} is not allowed`, type: 'invalid_request' } }))
    })
    const read = await h.request('/v1/conversations/conv_1', { method: 'PATCH' })
    expect(read.status).toBe(405)
    expect(read.headers.get('allow')).toBe('GET, HEAD')
    expect(await read.json()).toEqual({ error: { message: 'method PATCH is not allowed', type: 'invalid_request' } })
    // A path the proxy does not model goes to the provider whatever the method, HEAD too: its Allow is the provider's.
    expect((await h.request('/v1/agents', { method: 'DELETE' })).headers.get('allow')).toBe('GET')
  })

  it('HEAD on a JSON read carries the headers GET does, Content-Length included: MISS, HIT, BYPASS and STALE', async () => {
    const { h, up } = await scripted()
    const body = JSON.stringify({ data: [{ note: 'ünïcode' }], has_more: false, total: 1 })
    up.answer((req, _body, res) => {
      if (!req.url?.startsWith('/v1/conversations?')) return false
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(body)
    })
    const length = String(Buffer.byteLength(body))
    const described = (res: Response) => [res.status, res.headers.get('x-cache'), res.headers.get('content-type'), res.headers.get('content-length')]
    const head = (init: RequestInit = {}) => h.request(LIST, { ...init, method: 'HEAD' })

    expect(described(await head())).toEqual([200, 'MISS', 'application/json', length])
    expect(described(await head())).toEqual([200, 'HIT', 'application/json', length])
    expect(described(await head({ headers: { 'cache-control': 'no-store' } }))).toEqual([200, 'BYPASS', 'application/json', length])
    const get = await h.request(LIST)
    expect(described(get)).toEqual([200, 'HIT', 'application/json', length])
    expect(await get.text()).toBe(body)
    up.answer((_req, _body, res) => {
      res.writeHead(503, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: 'down', type: 'internal_error' } }))
    })
    await h.clock.advance(11_000)
    expect(described(await head())).toEqual([200, 'STALE', 'application/json', length])
    // An error answered to a HEAD describes its body too.
    const error = await h.request('/v1/conversations?limit=4', { method: 'HEAD' })
    const errorGet = await h.request('/v1/conversations?limit=4')
    expect(described(error)).toEqual(described(errorGet))
    expect(error.headers.get('content-length')).toBe(String(Buffer.byteLength(await errorGet.text())))
  })
})
