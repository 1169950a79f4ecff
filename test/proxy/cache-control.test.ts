import { afterEach, expect, it } from 'vitest'
import { describeEachDialect } from '../helpers/db.ts'
import { GLOBEX, proxyHarness, type ProxyHarness } from './helpers.ts'
import { scriptedUpstream, type ScriptedUpstream } from './scripted-upstream.ts'

const LIST = '/v1/conversations?limit=3'

/** The JSON cache keeps to Cache-Control as a shared cache must (RFC 9111), the provider's and the caller's. */
describeEachDialect('proxy: Cache-Control', (dialect) => {
  let h: ProxyHarness | undefined
  let up: ScriptedUpstream | undefined
  afterEach(async () => {
    await h?.close()
    await up?.close()
    h = undefined
    up = undefined
  })

  const scripted = async () => {
    h = await proxyHarness({ dialect, upstreamUrl: async (sandboxUrl) => (up = await scriptedUpstream(sandboxUrl)).url })
    return { h, up: up! }
  }

  /** The provider answers LIST with list number `n` (counted per request), with these headers. */
  const lists = (up: ScriptedUpstream, headers: Record<string, string> = {}) => {
    let n = 0
    up.answer((req, _body, res) => {
      if (!req.url?.startsWith('/v1/conversations?')) return false
      res.writeHead(200, { 'content-type': 'application/json', ...headers })
      res.end(JSON.stringify({ data: [], has_more: false, total: ++n }))
    })
  }
  const totalOf = async (res: Response) => ((await res.json()) as { total: number }).total
  const stored = async (h: ProxyHarness) => (await h.rt.store.db.selectFrom('cache_entries').select('key').execute()).length

  it('an answer the provider marks no-store is not kept: MISS each time, its Cache-Control passed on', async () => {
    const { h, up } = await scripted()
    for (const directive of ['no-store', 'private, no-store', 'max-age=60, No-Store']) {
      lists(up, { 'cache-control': directive })
      for (let i = 1; i <= 2; i++) {
        const res = await h.request(LIST)
        expect(res.status).toBe(200)
        expect(res.headers.get('x-cache'), directive).toBe('MISS')
        expect(res.headers.get('cache-control')).toBe(directive)
        expect(await totalOf(res)).toBe(i)
      }
      expect(await stored(h), directive).toBe(0)
    }
    // Anything else is kept as the table says (a quoted argument naming no-store is not the directive); `private` and
    // `no-cache` too: each entry is one tenant's, and many APIs mark every answer so.
    for (const [i, directive] of ['max-age=60, community="no-store, private"', 'private', 'no-cache, private'].entries()) {
      lists(up, { 'cache-control': directive })
      const list = `/v1/conversations?limit=${10 + i}`
      expect((await h.request(list)).headers.get('x-cache'), directive).toBe('MISS')
      const hit = await h.request(list)
      expect(hit.headers.get('x-cache'), directive).toBe('HIT')
      expect(hit.headers.get('cache-control')).toBeNull()
    }
  })

  it('a request with no-cache (or Pragma: no-cache) asks the provider and refreshes the entry; with no-store it leaves the cache alone', async () => {
    const { h, up } = await scripted()
    lists(up)
    expect(await totalOf(await h.request(LIST))).toBe(1)
    expect((await h.request(LIST)).headers.get('x-cache')).toBe('HIT')

    const revalidated = await h.request(LIST, { headers: { 'cache-control': 'no-cache' } })
    expect(revalidated.headers.get('x-cache')).toBe('MISS')
    expect(await totalOf(revalidated)).toBe(2)
    const refreshed = await h.request(LIST)
    expect(refreshed.headers.get('x-cache')).toBe('HIT')
    expect(await totalOf(refreshed)).toBe(2)

    const pragma = await h.request(LIST, { headers: { pragma: 'no-cache' } })
    expect(pragma.headers.get('x-cache')).toBe('MISS')
    expect(await totalOf(pragma)).toBe(3)
    // Pragma only counts without Cache-Control (RFC 9111 §5.4).
    expect((await h.request(LIST, { headers: { pragma: 'no-cache', 'cache-control': 'max-age=600' } })).headers.get('x-cache')).toBe('HIT')

    const unkept = await h.request(LIST, { method: 'GET', headers: { 'cache-control': 'no-store' } })
    expect(unkept.headers.get('x-cache')).toBe('BYPASS')
    expect(await totalOf(unkept)).toBe(4)
    const still = await h.request(LIST)
    expect(still.headers.get('x-cache')).toBe('HIT')
    expect(await totalOf(still)).toBe(3)
    // Nothing cached: a no-store read stores nothing.
    expect((await h.request('/v1/conversations?limit=4', { headers: { 'cache-control': 'no-store, no-cache' } })).headers.get('x-cache')).toBe('BYPASS')
    expect((await h.request('/v1/conversations?limit=4')).headers.get('x-cache')).toBe('MISS')
    expect(up.count('GET', /^\/v1\/conversations\?/)).toBe(6)
  })

  it('a no-cache request the provider fails is answered STALE from the kept copy, its own tenant only', async () => {
    const { h, up } = await scripted()
    lists(up)
    expect(await totalOf(await h.request(LIST))).toBe(1)
    up.answer((_req, _body, res) => {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '5' })
      res.end(JSON.stringify({ error: { message: 'down for maintenance', type: 'internal_error' } }))
    })
    const stale = await h.request(LIST, { headers: { 'cache-control': 'no-cache' } })
    expect(stale.headers.get('x-cache')).toBe('STALE')
    expect(stale.headers.get('retry-after')).toBe('5')
    expect(await totalOf(stale)).toBe(1)
    const other = await h.request(LIST, { key: GLOBEX, headers: { 'cache-control': 'no-cache' } })
    expect(other.status).toBe(503)
    expect(other.headers.get('x-cache')).toBe('MISS')
  })
})
