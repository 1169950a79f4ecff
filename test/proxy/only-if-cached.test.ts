import { expect, it } from 'vitest'
import { describeEachDialect } from '../helpers/db.ts'
import { ACME } from './helpers.ts'
import { harnessPerTest } from './harness-per-test.ts'

const ONLY = { 'cache-control': 'only-if-cached' }

/** A read sent with Cache-Control: only-if-cached gets what the cache holds fresh, or a 504 — never the provider (RFC 9111 §5.2.1.7). */
describeEachDialect('proxy: only-if-cached', (dialect) => {
  const { scripted } = harnessPerTest(dialect)
  /** The 504 in the provider's error shape, with X-Cache: BYPASS. */
  const expectNotCached = async (res: Response) => {
    expect([res.status, res.headers.get('x-cache'), res.headers.get('content-type')]).toEqual([504, 'BYPASS', 'application/json'])
    const body = (await res.json()) as { error: { message: string; type: string } }
    expect(body.error.type).toBe('internal_error')
    expect(body.error.message).toMatch(/only-if-cached/)
  }

  it('a JSON read: a fresh entry is a HIT; nothing kept, an expired copy or a caller\'s constraint it fails is a 504, the provider not asked', async () => {
    const { h, up } = await scripted()
    let n = 0
    up.answer((req, _body, res) => {
      if (!req.url?.startsWith('/v1/conversations?')) return false
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ data: [], has_more: false, total: ++n }))
    })
    const list = '/v1/conversations?limit=3'
    // The key is confirmed (a read of another list), so only the entry is missing.
    await (await h.request('/v1/conversations?limit=1')).text()
    const asked = () => up.seen.length
    const before = asked()
    await expectNotCached(await h.request(list, { headers: ONLY }))
    const head = await h.request(list, { method: 'HEAD', headers: ONLY })
    expect([head.status, head.headers.get('x-cache')]).toEqual([504, 'BYPASS'])
    expect(asked()).toBe(before)

    const miss = await h.request(list)
    expect([miss.status, miss.headers.get('x-cache')]).toEqual([200, 'MISS'])
    const body = await miss.text()
    await h.clock.advance(4_000)
    const hit = await h.request(list, { headers: ONLY })
    expect([hit.status, hit.headers.get('x-cache'), hit.headers.get('age'), await hit.text()]).toEqual([200, 'HIT', '4', body])
    const hitHead = await h.request(list, { method: 'HEAD', headers: { 'cache-control': 'max-age=60, only-if-cached' } })
    expect([hitHead.status, hitHead.headers.get('x-cache')]).toEqual([200, 'HIT'])
    // no-store does not forbid a stored answer; no-cache (max-age=0) asks for one only the provider gives, and a caller's
    // max-age too short for the entry refuses it.
    expect((await h.request(list, { headers: { 'cache-control': 'no-store, only-if-cached' } })).headers.get('x-cache')).toBe('HIT')
    await expectNotCached(await h.request(list, { headers: { 'cache-control': 'no-cache, only-if-cached' } }))
    await expectNotCached(await h.request(list, { headers: { 'cache-control': 'only-if-cached, max-age=0' } }))
    await expectNotCached(await h.request(list, { headers: { 'cache-control': 'max-age=3, only-if-cached' } }))
    // Expired (a list is fresh 10 s): the copy kept for STALE is not served, and the provider is not asked.
    await h.clock.advance(6_000)
    await expectNotCached(await h.request(list, { headers: { 'cache-control': 'Only-If-Cached' } }))
    expect(asked()).toBe(before + 1)
    expect(n).toBe(2)
  })

  it('a key not confirmed within the key window gets the 504, not the entry, and is not confirmed with the provider', async () => {
    const { h, up } = await scripted()
    const conversation = '/v1/conversations/conv_done'
    up.answer((req, _body, res) => {
      if (req.url !== conversation) return false
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ data: { conversation_id: 'conv_done', agent_id: 101, status: 'completed', recording_url: `${conversation}/recording` } }))
    })
    expect((await h.request(conversation)).headers.get('x-cache')).toBe('MISS')
    expect((await h.request(conversation, { headers: ONLY })).headers.get('x-cache')).toBe('HIT')
    // Kept a day, but the key was last confirmed two minutes ago (PROXY_KEY_WINDOW_SECONDS is 60).
    await h.clock.advance(120_000)
    const asked = up.seen.length
    await expectNotCached(await h.request(conversation, { headers: ONLY }))
    expect(up.seen.length).toBe(asked)
    expect((await h.request(conversation)).headers.get('x-cache')).toBe('MISS')
    expect((await h.request(conversation, { headers: ONLY })).headers.get('x-cache')).toBe('HIT')
  })

  it('a recording: the file from disk, its cached 404, or the 504; a query or a path the proxy does not cache is a 504', async () => {
    const { h, up } = await scripted()
    h.sandbox.seedConversations({ apiKey: ACME, agentId: 101, count: 6 })
    const items = (await (await h.direct('/v1/conversations?limit=6')).json()).data as Array<{ conversation_id: string; status: string }>
    const completed = items.find((c) => c.status === 'completed')!.conversation_id
    const missing = items.find((c) => c.status !== 'completed')!.conversation_id
    const path = `/v1/conversations/${completed}/recording`
    const gone = `/v1/conversations/${missing}/recording`
    await (await h.request('/v1/conversations?limit=1')).text()
    const before = up.seen.length
    await expectNotCached(await h.request(path, { headers: ONLY }))
    await expectNotCached(await h.request(gone, { headers: ONLY }))
    await expectNotCached(await h.request(`${path}?download=1`, { headers: ONLY }))
    await expectNotCached(await h.request('/v1/agents', { headers: ONLY }))
    expect(up.seen.length).toBe(before)

    const original = new Uint8Array(await (await h.request(path)).arrayBuffer())
    expect((await h.request(gone)).status).toBe(404)
    const asked = up.seen.length
    const hit = await h.request(path, { headers: ONLY })
    expect([hit.status, hit.headers.get('x-cache')]).toEqual([200, 'HIT'])
    expect(new Uint8Array(await hit.arrayBuffer())).toEqual(original)
    const part = await h.request(path, { headers: { ...ONLY, range: 'bytes=0-9' } })
    expect([part.status, part.headers.get('x-cache')]).toEqual([206, 'HIT'])
    expect(new Uint8Array(await part.arrayBuffer())).toEqual(original.slice(0, 10))
    const notFound = await h.request(gone, { headers: ONLY })
    expect([notFound.status, notFound.headers.get('x-cache')]).toEqual([404, 'HIT'])
    await notFound.text()
    expect(up.seen.length).toBe(asked)

    // The key unconfirmed: no confirming request, no file.
    await h.clock.advance(120_000)
    await expectNotCached(await h.request(path, { headers: ONLY }))
    await expectNotCached(await h.request(gone, { headers: ONLY }))
    expect(up.seen.length).toBe(asked)
  })
})
