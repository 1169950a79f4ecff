import { afterEach, describe, expect, it } from 'vitest'
import { ifNoneMatchMatches } from '../../src/proxy/if-none-match.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { ACME, proxyHarness, type ProxyHarness } from './helpers.ts'
import { harnessPerTest } from './harness-per-test.ts'

describe('ifNoneMatchMatches (RFC 9110 §13.1.2: weak comparison)', () => {
  it.each([
    ['"abc"', '"abc"', true],
    ['W/"abc"', '"abc"', true],
    ['"abc"', 'W/"abc"', true],
    ['W/"abc"', 'W/"abc"', true],
    ['"xyz", W/"abc"', '"abc"', true],
    ['"a,b" , "abc"', '"abc"', true],
    ['"a,b"', '"a,b"', true],
    ['*', '"abc"', true],
    [' * ', undefined, true],
    ['"abc"', undefined, false],
    ['"ab"', '"abc"', false],
    ['"ABC"', '"abc"', false],
    ['w/"abc"', '"abc"', false],
    ['abc', '"abc"', false],
    ['"a,b"', '"a"', false],
    ['"abc" junk', '"abc"', false],
    ['"abc", *', '"abc"', false],
    [', "abc" ,', '"abc"', true],
    [null, '"abc"', false],
  ])('%s against %s', (header, etag, expected) => {
    expect(ifNoneMatchMatches(header, etag)).toBe(expected)
  })
})

/** A recording asked with If-None-Match naming the ETag the caller has: 304 Not Modified on every path, no body. */
describeEachDialect('proxy recordings: If-None-Match', (dialect) => {
  let h: ProxyHarness | undefined
  afterEach(async () => {
    await h?.close()
    h = undefined
  })

  async function recordings(h: ProxyHarness): Promise<string[]> {
    h.sandbox.seedConversations({ apiKey: ACME, agentId: 101, count: 12 })
    const items = (await (await h.direct('/v1/conversations?limit=12')).json()).data as Array<{ conversation_id: string; status: string }>
    return items.filter((c) => c.status === 'completed').map((c) => `/v1/conversations/${c.conversation_id}/recording`)
  }
  /** A 304 as RFC 9110 §15.4.5 has it: the ETag and caching fields of the 200, a Date, and nothing of the body. */
  const expectNotModified = async (res: Response, cache: string, etag: string) => {
    expect([res.status, res.headers.get('x-cache'), res.headers.get('etag')]).toEqual([304, cache, etag])
    expect(res.headers.get('cache-control')).toBe('private, max-age=86400')
    expect(res.headers.get('date')).not.toBeNull()
    for (const name of ['content-type', 'content-length', 'content-range', 'content-disposition', 'x-switchboard-must-revalidate']) expect(res.headers.get(name), name).toBeNull()
    expect((await res.arrayBuffer()).byteLength).toBe(0)
  }

  it('a MISS answers 304 once the recording is fetched and kept; the next read is a HIT of the whole file', async () => {
    h = await proxyHarness({ dialect })
    const [first, second, third] = await recordings(h)
    const etag = (await h.direct(first!)).headers.get('etag')!
    const original = new Uint8Array(await (await h.direct(first!)).arrayBuffer())
    expect(etag).toMatch(/^"/)
    const requests = h.sandbox.stats().requests
    await expectNotModified(await h.request(first!, { headers: { 'if-none-match': etag } }), 'MISS', etag)
    expect(h.sandbox.stats().requests).toBe(requests + 1)
    const hit = await h.request(first!)
    expect([hit.status, hit.headers.get('x-cache')]).toEqual([200, 'HIT'])
    expect(new Uint8Array(await hit.arrayBuffer())).toEqual(original)
    expect(h.sandbox.stats().requests).toBe(requests + 1)

    // `*` matches any recording; a tag that is not this one's is the whole file, as before.
    await expectNotModified(await h.request(second!, { headers: { 'if-none-match': '*' } }), 'MISS', (await h.direct(second!)).headers.get('etag')!)
    expect((await h.request(second!)).headers.get('x-cache')).toBe('HIT')
    const other = await h.request(third!, { headers: { 'if-none-match': '"some-other-recording"' } })
    expect([other.status, other.headers.get('x-cache')]).toEqual([200, 'MISS'])
    expect((await other.arrayBuffer()).byteLength).toBeGreaterThan(1000)
  })

  it('a HIT answers 304 for the ETag, weak or in a list, for GET and HEAD and whatever the Range; STALE too', async () => {
    h = await proxyHarness({ dialect })
    const [path] = await recordings(h)
    const original = new Uint8Array(await (await h.request(path!)).arrayBuffer())
    const etag = (await h.direct(path!)).headers.get('etag')!
    const requests = h.sandbox.stats().requests
    for (const condition of [etag, `W/${etag}`, `"nope", W/${etag}`, `"a,b",${etag}`, '*']) {
      await expectNotModified(await h.request(path!, { headers: { 'if-none-match': condition } }), 'HIT', etag)
    }
    await expectNotModified(await h.request(path!, { method: 'HEAD', headers: { 'if-none-match': etag } }), 'HIT', etag)
    await expectNotModified(await h.request(path!, { headers: { 'if-none-match': etag, range: 'bytes=0-9', 'if-range': etag } }), 'HIT', etag)
    expect(h.sandbox.stats().requests).toBe(requests)
    // Not this ETag: the answer the request would get without the condition.
    const part = await h.request(path!, { headers: { 'if-none-match': '"nope"', range: 'bytes=0-9' } })
    expect([part.status, part.headers.get('x-cache')]).toEqual([206, 'HIT'])
    expect(new Uint8Array(await part.arrayBuffer())).toEqual(original.slice(0, 10))
    // The key unconfirmed and the provider down: the copy on disk answers STALE, a 304 all the same.
    await h.clock.advance(120_000)
    await h.stopSandbox()
    await expectNotModified(await h.request(path!, { headers: { 'if-none-match': etag } }), 'STALE', etag)
  })
})

/** What the proxy only passes on (a recording asked with a query, a route it does not know): conditional as asked. */
describeEachDialect('proxy: conditional requests it passes on', (dialect) => {
  const { scripted } = harnessPerTest(dialect)

  it('If-None-Match and If-Modified-Since reach the provider, and its 304 comes back with the ETag and no body', async () => {
    const { h, up } = await scripted()
    const seen: Array<Record<string, string | undefined>> = []
    up.answer((req, _body, res) => {
      seen.push({ 'if-none-match': req.headers['if-none-match'], 'if-modified-since': req.headers['if-modified-since'] })
      res.writeHead(304, { etag: '"rec-v1"', 'cache-control': 'private, max-age=86400' })
      res.end()
    })
    const since = 'Tue, 01 Dec 2026 10:00:00 GMT'
    const res = await h.request('/v1/conversations/conv_1/recording?download=1', { headers: { 'if-none-match': '"rec-v1"', 'if-modified-since': since } })
    expect([res.status, res.headers.get('x-cache'), res.headers.get('etag')]).toEqual([304, 'BYPASS', '"rec-v1"'])
    expect((await res.arrayBuffer()).byteLength).toBe(0)
    expect(seen).toEqual([{ 'if-none-match': '"rec-v1"', 'if-modified-since': since }])
  })
})
