import { expect, it } from 'vitest'
import { describeEachDialect } from '../helpers/db.ts'
import { GLOBEX, type ProxyHarness } from './helpers.ts'
import { type ScriptedUpstream } from './scripted-upstream.ts'
import { harnessPerTest } from './harness-per-test.ts'

const LIST = '/v1/conversations?limit=3'

/** The JSON cache keeps to Cache-Control as a shared cache must (RFC 9111), the provider's and the caller's. */
describeEachDialect('proxy: Cache-Control', (dialect) => {
  const { scripted } = harnessPerTest(dialect)

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

/** What the proxy does to an entry it holds when the provider's or the caller's Cache-Control asks for something else. */
describeEachDialect('proxy: Cache-Control and the entry already kept', (dialect) => {
  const { scripted } = harnessPerTest(dialect)
  /** The provider answers LIST with list number `n` (counted per request), the headers of that answer chosen by `n`. */
  const lists = (up: ScriptedUpstream, headersOf: (n: number) => Record<string, string> = () => ({})) => {
    let n = 0
    up.answer((req, _body, res) => {
      if (!req.url?.startsWith('/v1/conversations?')) return false
      n++
      res.writeHead(200, { 'content-type': 'application/json', ...headersOf(n) })
      res.end(JSON.stringify({ data: [], has_more: false, total: n }))
    })
  }
  const failing = (up: ScriptedUpstream, headers: Record<string, string> = {}) =>
    up.answer((_req, _body, res) => {
      res.writeHead(503, { 'content-type': 'application/json', ...headers })
      res.end(JSON.stringify({ error: { message: 'down for maintenance', type: 'internal_error' } }))
    })
  const totalOf = async (res: Response) => ((await res.json()) as { total: number }).total
  const seen = async (res: Response) => [res.status, res.headers.get('x-cache'), await totalOf(res)]

  it('a no-store answer removes the older entry: it is neither a HIT after it nor STALE when the provider fails', async () => {
    const { h, up } = await scripted()
    lists(up, (n): Record<string, string> => (n === 1 ? {} : { 'cache-control': 'no-store' }))
    expect(await seen(await h.request(LIST))).toEqual([200, 'MISS', 1])
    expect(await seen(await h.request(LIST))).toEqual([200, 'HIT', 1])
    // Revalidated: the provider now says its answer must not be kept — and so neither may the one before it.
    expect(await seen(await h.request(LIST, { headers: { 'cache-control': 'no-cache' } }))).toEqual([200, 'MISS', 2])
    expect(await seen(await h.request(LIST))).toEqual([200, 'MISS', 3])
    failing(up)
    const down = await h.request(LIST)
    expect(down.status).toBe(503)
    expect(down.headers.get('x-cache')).toBe('MISS')

    // The same once the entry expired: the no-store answer that replaces it leaves nothing to answer STALE from.
    lists(up, (n): Record<string, string> => (n === 1 ? {} : { 'cache-control': 'private, no-store' }))
    const other = '/v1/conversations?limit=4'
    expect(await seen(await h.request(other))).toEqual([200, 'MISS', 1])
    await h.clock.advance(11_000)
    expect(await seen(await h.request(other))).toEqual([200, 'MISS', 2])
    failing(up)
    expect((await h.request(other)).headers.get('x-cache')).toBe('MISS')
    expect(await h.rt.store.db.selectFrom('cache_entries').select('key').execute()).toEqual([])

    // An error marked no-store (a gateway's 503 page often is) replaces nothing: the copy stays, to answer STALE.
    lists(up)
    const kept = '/v1/conversations?limit=5'
    expect(await seen(await h.request(kept))).toEqual([200, 'MISS', 1])
    failing(up, { 'cache-control': 'no-store' })
    expect(await seen(await h.request(kept, { headers: { 'cache-control': 'no-cache' } }))).toEqual([200, 'STALE', 1])
    expect(await seen(await h.request(kept))).toEqual([200, 'HIT', 1])

    // A recording's cached 404 likewise.
    const recording = '/v1/conversations/conv_gone/recording'
    let misses = 0
    up.answer((_req, _body, res) => {
      res.writeHead(404, { 'content-type': 'application/json', ...(++misses > 1 ? { 'cache-control': 'no-store' } : {}) })
      res.end(JSON.stringify({ error: { message: 'recording not found', type: 'not_found' } }))
    })
    expect((await h.request(recording)).headers.get('x-cache')).toBe('MISS')
    await h.clock.advance(6_000)
    expect((await h.request(recording)).headers.get('x-cache')).toBe('MISS')
    await up.close()
    const unreachable = await h.request(recording)
    expect(unreachable.status).toBe(502)
    expect(unreachable.headers.get('x-cache')).toBe('BYPASS')
  })

  it('a request with max-age=0 revalidates like no-cache; with max-age=N it takes an entry at most N seconds old', async () => {
    const { h, up } = await scripted()
    lists(up)
    expect(await seen(await h.request(LIST))).toEqual([200, 'MISS', 1])
    expect(await seen(await h.request(LIST, { headers: { 'cache-control': 'max-age=0' } }))).toEqual([200, 'MISS', 2])
    expect(await seen(await h.request(LIST))).toEqual([200, 'HIT', 2])
    await h.clock.advance(5_000)
    const young = await h.request(LIST, { headers: { 'cache-control': 'max-age=5' } })
    expect(young.headers.get('age')).toBe('5')
    expect(await seen(young)).toEqual([200, 'HIT', 2])
    // Too old for this caller (5 s > 4 s): asked again, and the answer refreshes the entry.
    expect(await seen(await h.request(LIST, { headers: { 'cache-control': 'max-age=4' } }))).toEqual([200, 'MISS', 3])
    const refreshed = await h.request(LIST)
    expect(refreshed.headers.get('age')).toBe('0')
    expect(await seen(refreshed)).toEqual([200, 'HIT', 3])
    // A value that is not a number of seconds asks the provider (RFC 9111 §1.2.2: the safe reading).
    expect(await seen(await h.request(LIST, { headers: { 'cache-control': 'max-age=soon' } }))).toEqual([200, 'MISS', 4])
    // The provider failing, a caller's max-age still gets the kept copy, as no-cache does.
    await h.clock.advance(3_000)
    failing(up)
    const stale = await h.request(LIST, { headers: { 'cache-control': 'max-age=1' } })
    expect(await seen(stale)).toEqual([200, 'STALE', 4])
  })

  it('the provider\'s max-age or s-maxage shorter than the table\'s TTL caps how long the entry is fresh; s-maxage wins', async () => {
    const { h, up } = await scripted()
    const cases: Array<[string, number]> = [
      // [Cache-Control, how long the entry is fresh (ms)]; a conversation list is kept 10 s.
      ['max-age=2', 2_000],
      ['private, max-age=3', 3_000],
      ['max-age=60, s-maxage=1', 1_000],
      ['s-maxage=5, max-age=1', 5_000],
      ['max-age=3600', 10_000],
      ['max-age=0', 0],
      ['max-age=-1', 0],
    ]
    for (const [i, [directive, freshMs]] of cases.entries()) {
      lists(up, () => ({ 'cache-control': directive }))
      const list = `/v1/conversations?limit=${20 + i}`
      expect(await seen(await h.request(list)), directive).toEqual([200, 'MISS', 1])
      if (freshMs > 0) {
        await h.clock.advance(freshMs - 1)
        expect((await h.request(list)).headers.get('x-cache'), `${directive}, ${freshMs - 1} ms on`).toBe('HIT')
        await h.clock.advance(1)
      }
      expect((await h.request(list)).headers.get('x-cache'), `${directive}, ${freshMs} ms on`).toBe('MISS')
    }
    // Kept past its freshness all the same, to answer STALE while the provider fails.
    failing(up)
    expect((await h.request('/v1/conversations?limit=20')).headers.get('x-cache')).toBe('STALE')
  })
})
