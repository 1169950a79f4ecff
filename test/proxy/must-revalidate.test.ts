import { expect, it } from 'vitest'
import { describeEachDialect } from '../helpers/db.ts'
import { type ScriptedUpstream } from './scripted-upstream.ts'
import { harnessPerTest } from './harness-per-test.ts'

/**
 * An answer the provider marks must-revalidate, proxy-revalidate or s-maxage is one a shared cache must not serve stale
 * (RFC 9111 §4.2.4, §5.2.2.2, §5.2.2.8, §5.2.2.10): once its entry expired, the provider's error or the proxy's 502/504
 * is the answer, never the kept copy.
 */
/** The private header the proxy marks such an entry's stored headers with (src/proxy/revalidation-mark.ts). */
const REVALIDATE_MARK = 'x-switchboard-must-revalidate'

describeEachDialect('proxy: must-revalidate, proxy-revalidate and s-maxage', (dialect) => {
  const { scripted } = harnessPerTest(dialect)
  /** The provider answers every conversation list with list number `n`, with these headers. */
  const lists = (up: ScriptedUpstream, headers: Record<string, string>) => {
    let n = 0
    up.answer((req, _body, res) => {
      if (!req.url?.startsWith('/v1/conversations?')) return false
      res.writeHead(200, { 'content-type': 'application/json', ...headers })
      res.end(JSON.stringify({ data: [], has_more: false, total: ++n }))
    })
  }
  const failing = (up: ScriptedUpstream) =>
    up.answer((_req, _body, res) => {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '7' })
      res.end(JSON.stringify({ error: { message: 'down for maintenance', type: 'internal_error' } }))
    })
  const seen = async (res: Response) => [res.status, res.headers.get('x-cache'), await res.text()]
  const list = (n: number) => `/v1/conversations?limit=${n}`
  const maintenance = JSON.stringify({ error: { message: 'down for maintenance', type: 'internal_error' } })

  it('an expired entry so marked is not STALE when the provider fails: its error passes through as a MISS', async () => {
    const { h, up } = await scripted()
    const cases = ['must-revalidate', 'private, max-age=3, Must-Revalidate', 'proxy-revalidate', 's-maxage=5', 'max-age=60, s-maxage=2']
    for (const [i, directive] of cases.entries()) {
      lists(up, { 'cache-control': directive })
      expect((await h.request(list(30 + i))).headers.get('x-cache'), directive).toBe('MISS')
      expect((await h.request(list(30 + i))).headers.get('x-cache'), directive).toBe('HIT')
    }
    // One the provider did not so mark: STALE as before.
    lists(up, { 'cache-control': 'max-age=5' })
    await h.request(list(40))
    await h.clock.advance(11_000)
    failing(up)
    for (const [i, directive] of cases.entries()) {
      const res = await h.request(list(30 + i))
      expect(res.headers.get('retry-after'), directive).toBe('7')
      expect(await seen(res), directive).toEqual([503, 'MISS', maintenance])
    }
    const unmarked = await h.request(list(40))
    expect(unmarked.headers.get('retry-after')).toBe('7')
    expect(await seen(unmarked)).toEqual([200, 'STALE', JSON.stringify({ data: [], has_more: false, total: 1 })])
    // The copy is still kept (the provider may be back): a good answer replaces it, and is a HIT after.
    expect(await h.rt.store.db.selectFrom('cache_entries').select('key').execute()).toHaveLength(cases.length + 1)
    lists(up, { 'cache-control': 'must-revalidate' })
    expect((await seen(await h.request(list(30)))).slice(0, 2)).toEqual([200, 'MISS'])
    expect((await seen(await h.request(list(30)))).slice(0, 2)).toEqual([200, 'HIT'])
  })

  it('an expired entry so marked is not STALE when the provider is unreachable or times out: 502/504 BYPASS', async () => {
    const { h, up } = await scripted({ UPSTREAM_TIMEOUT_MS: '300' })
    lists(up, { 'cache-control': 'max-age=5, must-revalidate' })
    await h.request(list(3))
    lists(up, { 'cache-control': 'max-age=5' })
    await h.request(list(4))
    await h.clock.advance(6_000)
    // No answer at all: the timeout.
    up.answer(() => {})
    const timedOut = await h.request(list(3))
    expect(timedOut.headers.get('content-type')).toBe('application/json')
    expect(timedOut.status).toBe(504)
    expect(timedOut.headers.get('x-cache')).toBe('BYPASS')
    expect(await timedOut.json()).toEqual({ error: { message: 'the provider did not answer within 300 ms', type: 'internal_error' } })
    expect((await seen(await h.request(list(4)))).slice(0, 2)).toEqual([200, 'STALE'])
    await up.close()
    const unreachable = await h.request(list(3))
    expect(unreachable.status).toBe(502)
    expect(unreachable.headers.get('x-cache')).toBe('BYPASS')
    expect(((await unreachable.json()) as { error: { type: string } }).error.type).toBe('internal_error')
    const head = await h.request(list(3), { method: 'HEAD' })
    expect([head.status, head.headers.get('x-cache')]).toEqual([502, 'BYPASS'])
    expect((await seen(await h.request(list(4)))).slice(0, 2)).toEqual([200, 'STALE'])
  })

  it('a fresh entry so marked still answers STALE a no-cache read the provider fails: it is not stale yet', async () => {
    const { h, up } = await scripted()
    lists(up, { 'cache-control': 'must-revalidate' })
    await h.request(list(3))
    failing(up)
    expect((await seen(await h.request(list(3), { headers: { 'cache-control': 'no-cache' } }))).slice(0, 2)).toEqual([200, 'STALE'])
    await h.clock.advance(10_000)
    expect((await seen(await h.request(list(3), { headers: { 'cache-control': 'no-cache' } }))).slice(0, 2)).toEqual([503, 'MISS'])
  })

  it('the mark is stored with the entry and never sent: not on a MISS, HIT, HEAD or STALE', async () => {
    const { h, up } = await scripted()
    lists(up, { 'cache-control': 'must-revalidate' })
    const answers = [await h.request(list(3)), await h.request(list(3)), await h.request(list(3), { method: 'HEAD' })]
    const [row] = await h.rt.store.db.selectFrom('cache_entries').select('headers').execute()
    expect(JSON.parse(row!.headers)).toEqual({ 'content-type': 'application/json', [REVALIDATE_MARK]: '1' })
    failing(up)
    answers.push(await h.request(list(3), { headers: { 'cache-control': 'no-cache' } }))
    answers.push(await h.request(list(3), { method: 'HEAD', headers: { 'cache-control': 'no-cache' } }))
    expect(answers.map((a) => a.headers.get('x-cache'))).toEqual(['MISS', 'HIT', 'HIT', 'STALE', 'STALE'])
    for (const answer of answers) {
      expect(answer.headers.has(REVALIDATE_MARK)).toBe(false)
      expect([...answer.headers.keys()].filter((name) => name.startsWith('x-switchboard'))).toEqual([])
    }
    // A provider that sends a header of that name itself does not mark anything.
    lists(up, { [REVALIDATE_MARK]: '1' })
    await h.request(list(4))
    await h.clock.advance(11_000)
    failing(up)
    const stale = await h.request(list(4))
    expect(stale.headers.get('x-cache')).toBe('STALE')
    expect(stale.headers.has(REVALIDATE_MARK)).toBe(false)
  })

  it('an entry stored before the mark existed (none in its headers) keeps answering STALE', async () => {
    const { h, up } = await scripted()
    lists(up, { 'cache-control': 'must-revalidate' })
    await h.request(list(3))
    await h.rt.store.db.updateTable('cache_entries').set({ headers: JSON.stringify({ 'content-type': 'application/json' }) }).execute()
    await h.clock.advance(11_000)
    failing(up)
    expect((await seen(await h.request(list(3)))).slice(0, 2)).toEqual([200, 'STALE'])
  })

  it('a recording\'s cached 404 so marked is not STALE once expired while the provider is unreachable', async () => {
    const { h, up } = await scripted()
    const marked = '/v1/conversations/conv_gone/recording'
    const unmarked = '/v1/conversations/conv_lost/recording'
    up.answer((req, _body, res) => {
      res.writeHead(404, { 'content-type': 'application/json', ...(req.url === marked ? { 'cache-control': 'proxy-revalidate' } : {}) })
      res.end(JSON.stringify({ error: { message: 'recording not found', type: 'not_found' } }))
    })
    expect((await seen(await h.request(marked))).slice(0, 2)).toEqual([404, 'MISS'])
    expect((await seen(await h.request(unmarked))).slice(0, 2)).toEqual([404, 'MISS'])
    const hit = await h.request(marked)
    expect([hit.status, hit.headers.get('x-cache'), hit.headers.has(REVALIDATE_MARK)]).toEqual([404, 'HIT', false])
    await h.clock.advance(6_000)
    await up.close()
    const refused = await h.request(marked)
    expect([refused.status, refused.headers.get('x-cache')]).toEqual([502, 'BYPASS'])
    expect(((await refused.json()) as { error: { type: string } }).error.type).toBe('internal_error')
    const stale = await h.request(unmarked)
    expect([stale.status, stale.headers.get('x-cache'), stale.headers.has(REVALIDATE_MARK)]).toEqual([404, 'STALE', false])
  })
})
