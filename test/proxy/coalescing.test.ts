import { expect, it } from 'vitest'
import { describeEachDialect } from '../helpers/db.ts'
import { ACME, GLOBEX, type ProxyHarness } from './helpers.ts'
import { gate, type ScriptedUpstream } from './scripted-upstream.ts'
import { harnessPerTest } from './harness-per-test.ts'

const json = { 'content-type': 'application/json' }
/** Misses that joined a request already in flight, as /metrics counts them. */
async function coalesced(h: ProxyHarness): Promise<number> {
  const line = (await h.rt.metrics.metrics()).split('\n').find((l) => l.startsWith('switchboard_proxy_coalesced_total '))
  return Number(line?.split(' ')[1] ?? 0)
}

describeEachDialect('proxy: identical misses in flight share one upstream request', (dialect) => {
  const { scripted } = harnessPerTest(dialect)

  /** Answers GETs of `path` (or matching it) once the gate opens, each with its tenant's own list and a sequence number. */
  function listsAfter(up: ScriptedUpstream, path: string | RegExp) {
    const held = gate()
    let n = 0
    up.answer(async (req, _body, res) => {
      if (typeof path === 'string' ? req.url !== path : !path.test(req.url ?? '')) return false
      const seq = ++n
      await held.wait
      res.writeHead(200, { ...json, 'x-ratelimit-remaining': String(100 - seq) })
      res.end(JSON.stringify({ data: [], has_more: false, total: seq, key: req.headers.authorization }))
    })
    return held
  }

  it('20 concurrent identical misses make one upstream request, and every one gets its status, headers and body', async () => {
    const { h, up } = await scripted()
    // The same query in either order is the same entry, so the same request; a HEAD shares the GET's answer.
    const paths = ['/v1/conversations?limit=7&offset=0', '/v1/conversations?offset=0&limit=7']
    const list = /^\/v1\/conversations\?/
    const path = paths[0]!
    const held = listsAfter(up, list)
    const pending = Array.from({ length: 20 }, (_, i) => h.request(paths[i % 2]!, { method: i === 5 ? 'HEAD' : 'GET' }))
    await expect.poll(() => up.count('GET', list)).toBe(1)
    // Every other one joined it (a fixed wait here let a slow request arrive after the answer, and read it as a HIT).
    await expect.poll(() => coalesced(h), { timeout: 15_000 }).toBe(19)
    held.open()
    const answers = await Promise.all(pending)
    expect(up.count('GET', list)).toBe(1)
    for (const [i, res] of answers.entries()) {
      expect(res.status).toBe(200)
      expect(res.headers.get('x-ratelimit-remaining')).toBe('99')
      expect(res.headers.get('content-type')).toBe('application/json')
      const text = await res.text()
      if (i === 5) expect(text).toBe('')
      else expect(JSON.parse(text)).toEqual({ data: [], has_more: false, total: 1, key: `Bearer ${ACME}` })
    }
    expect((await h.request(path)).headers.get('x-cache')).toBe('HIT')
  })

  it('never shares across tenants: two keys asking the same path at once each get their own answer', async () => {
    const { h, up } = await scripted()
    const path = '/v1/batch-calls?limit=3'
    const held = listsAfter(up, path)
    const pending = [ACME, GLOBEX, ACME, GLOBEX].map((key) => h.request(path, { key }))
    await expect.poll(() => up.count('GET', path)).toBe(2)
    await expect.poll(() => coalesced(h), { timeout: 15_000 }).toBe(2)
    held.open()
    const bodies = await Promise.all(pending.map(async (p) => (await (await p).json()).key))
    expect(bodies).toEqual([`Bearer ${ACME}`, `Bearer ${GLOBEX}`, `Bearer ${ACME}`, `Bearer ${GLOBEX}`])
    expect(up.count('GET', path)).toBe(2)
  })

  it('the request that started the upstream request, or one joined to it, hanging up does not cancel it for the others', async () => {
    const { h, up } = await scripted()
    const path = '/v1/conversations?limit=9'
    const held = listsAfter(up, path)
    const leader = new AbortController()
    const follower = new AbortController()
    const first = h.request(path, { signal: leader.signal })
    await expect.poll(() => up.count('GET', path)).toBe(1)
    const gone = h.request(path, { signal: follower.signal })
    const staying = [h.request(path), h.request(path)]
    await expect.poll(() => coalesced(h), { timeout: 15_000 }).toBe(3)
    leader.abort()
    follower.abort()
    await expect(first).rejects.toThrow()
    await expect(gone).rejects.toThrow()
    held.open()
    for (const res of await Promise.all(staying)) {
      expect(res.status).toBe(200)
      expect((await res.json()).total).toBe(1)
    }
    expect(up.count('GET', path)).toBe(1)
    // The shared answer was stored too, though the request that started it was gone.
    expect((await h.request(path)).headers.get('x-cache')).toBe('HIT')
  })

  it('while the provider hangs, requests for an expired entry share one upstream timeout and all get STALE', async () => {
    const { h, up } = await scripted({ UPSTREAM_TIMEOUT_MS: '300' })
    const path = '/v1/conversations?limit=4'
    const fresh = await h.request(path)
    expect(fresh.headers.get('x-cache')).toBe('MISS')
    const body = await fresh.text()
    await h.clock.advance(11_000)
    up.answer((req) => (req.url === path ? undefined : false)) // never answered
    const answers = await Promise.all(Array.from({ length: 10 }, () => h.request(path)))
    for (const res of answers) {
      expect(res.headers.get('x-cache')).toBe('STALE')
      expect(await res.text()).toBe(body)
    }
    expect(up.count('GET', path)).toBe(2)
    // A failure is not remembered: the next request asks again.
    up.answer(undefined)
    expect((await h.request(path)).headers.get('x-cache')).toBe('MISS')
  })
})
