import { readdirSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ABANDONED_DOWNLOAD_MS, parseRange } from '../../src/proxy/recordings.ts'
import { MAINTENANCE_INTERVAL_MS, startProxyMaintenance } from '../../src/proxy/mount.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { ACME, DISABLED, GLOBEX, MADE_UP, proxyHarness, type ProxyHarness } from './helpers.ts'

describe('parseRange', () => {
  it.each([
    ['bytes=0-99', 1000, { start: 0, end: 99 }],
    ['bytes=990-', 1000, { start: 990, end: 999 }],
    ['bytes=-10', 1000, { start: 990, end: 999 }],
    ['bytes=-5000', 1000, { start: 0, end: 999 }],
    ['bytes=500-5000', 1000, { start: 500, end: 999 }],
    ['bytes=999-999', 1000, { start: 999, end: 999 }],
    ['bytes=1000-', 1000, 'unsatisfiable'],
    ['bytes=-0', 1000, 'unsatisfiable'],
    ['bytes=0-', 0, 'unsatisfiable'],
    ['bytes=5-1', 1000, undefined],
    ['bytes=0-1,5-9', 1000, undefined],
    ['items=0-1', 1000, undefined],
    [null, 1000, undefined],
  ])('%s of %d bytes', (header, size, expected) => {
    expect(parseRange(header, size)).toEqual(expected)
  })
})

describeEachDialect('proxy recordings', (dialect) => {
  let h: ProxyHarness | undefined
  afterEach(async () => {
    await h?.close()
    h = undefined
  })

  async function completedAndMissing(h: ProxyHarness): Promise<{ completed: string; noRecording: string }> {
    h.sandbox.seedConversations({ apiKey: ACME, agentId: 101, count: 6 })
    const items = (await (await h.direct('/v1/conversations?limit=6')).json()).data as Array<{ conversation_id: string; status: string }>
    return {
      completed: items.find((c) => c.status === 'completed')!.conversation_id,
      noRecording: items.find((c) => c.status !== 'completed')!.conversation_id,
    }
  }

  it('downloads once (MISS), then serves from disk (HIT), byte-exact against the sandbox, with Range, HEAD and 416', async () => {
    h = await proxyHarness({ dialect })
    const { completed } = await completedAndMissing(h)
    const path = `/v1/conversations/${completed}/recording`
    const original = new Uint8Array(await (await h.direct(path)).arrayBuffer())
    expect(original.length).toBeGreaterThan(1000)
    expect(new TextDecoder().decode(original.slice(0, 4))).toBe('RIFF')

    const first = await h.request(path)
    expect(first.status).toBe(200)
    expect(first.headers.get('x-cache')).toBe('MISS')
    expect(first.headers.get('accept-ranges')).toBe('bytes')
    expect(first.headers.get('age')).toBeNull()
    expect(new Uint8Array(await first.arrayBuffer())).toEqual(original)
    const requests = h.sandbox.stats().requests

    const second = await h.request(path)
    expect(second.headers.get('x-cache')).toBe('HIT')
    expect(second.headers.get('content-type')).toBe(first.headers.get('content-type'))
    expect(second.headers.get('content-length')).toBe(String(original.length))
    expect(new Uint8Array(await second.arrayBuffer())).toEqual(original)

    const size = original.length
    for (const [range, start, end] of [
      ['bytes=0-43', 0, 43],
      ['bytes=100-1099', 100, 1099],
      [`bytes=${size - 10}-`, size - 10, size - 1],
      ['bytes=-16', size - 16, size - 1],
      [`bytes=5-${size + 100}`, 5, size - 1],
    ] as const) {
      const part = await h.request(path, { headers: { range } })
      expect(part.status, range).toBe(206)
      expect(part.headers.get('content-range')).toBe(`bytes ${start}-${end}/${size}`)
      expect(part.headers.get('content-length')).toBe(String(end - start + 1))
      expect(new Uint8Array(await part.arrayBuffer())).toEqual(original.slice(start, end + 1))
    }
    const beyond = await h.request(path, { headers: { range: `bytes=${size}-` } })
    expect(beyond.status).toBe(416)
    expect(beyond.headers.get('content-range')).toBe(`bytes */${size}`)
    // The provider's kept headers on a HIT's 416 too, as on every other answer.
    expect(beyond.headers.get('x-cache')).toBe('HIT')
    expect(beyond.headers.get('content-disposition')).toMatch(/^attachment; filename=/)
    await beyond.arrayBuffer()

    const head = await h.request(path, { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(head.headers.get('content-length')).toBe(String(size))
    expect((await head.arrayBuffer()).byteLength).toBe(0)
    // None of that went upstream.
    expect(h.sandbox.stats().requests).toBe(requests)

    // On disk under a content-addressed name.
    const files = readdirSync(join(h.rt.dataDir, 'recordings')).filter((f) => f !== 'tmp')
    expect(files).toHaveLength(1)
    expect(files[0]).toMatch(/^[0-9a-f]{64}$/)
  })

  it('the same bytes carry the same ETag whichever path serves them: MISS, HIT, HEAD, STALE and a query\'s BYPASS', async () => {
    h = await proxyHarness({ dialect })
    h.sandbox.seedConversations({ apiKey: ACME, agentId: 101, count: 6 })
    const items = (await (await h.direct('/v1/conversations?limit=6')).json()).data as Array<{ conversation_id: string; status: string }>
    const [first, second] = items.filter((c) => c.status === 'completed').map((c) => c.conversation_id)
    const path = `/v1/conversations/${first}/recording`
    const etag = (await h.direct(path)).headers.get('etag')
    expect(etag).toMatch(/^"/)
    const tagged = async (res: Response) => {
      await res.arrayBuffer()
      return [res.headers.get('x-cache'), res.headers.get('etag')]
    }
    expect(await tagged(await h.request(path))).toEqual(['MISS', etag])
    expect(await tagged(await h.request(path))).toEqual(['HIT', etag])
    expect(await tagged(await h.request(path, { method: 'HEAD' }))).toEqual(['HIT', etag])
    expect(await tagged(await h.request(`${path}?download=1`))).toEqual(['BYPASS', etag])
    // If-Range takes that one validator on every path: a range of the cached file, and of one not cached yet.
    const part = await h.request(path, { headers: { range: 'bytes=0-9', 'if-range': etag! } })
    expect([part.status, ...(await tagged(part))]).toEqual([206, 'HIT', etag])
    const secondPath = `/v1/conversations/${second}/recording`
    const secondTag = (await h.direct(secondPath)).headers.get('etag')!
    const missPart = await h.request(secondPath, { headers: { range: 'bytes=0-9', 'if-range': secondTag } })
    expect([missPart.status, ...(await tagged(missPart))]).toEqual([206, 'MISS', secondTag])
    await h.clock.advance(120_000)
    await h.stopSandbox()
    expect(await tagged(await h.request(path))).toEqual(['STALE', etag])
  })

  it('keeps recordings per tenant: another tenant 404, bad keys 401, a missing recording stays 404', async () => {
    h = await proxyHarness({ dialect })
    const { completed, noRecording } = await completedAndMissing(h)
    const path = `/v1/conversations/${completed}/recording`
    await (await h.request(path)).arrayBuffer()
    const other = await h.request(path, { key: GLOBEX })
    expect(other.status).toBe(404)
    expect(await other.json()).toEqual({ error: { message: 'conversation not found', type: 'not_found' } })
    for (const key of [MADE_UP, DISABLED]) expect((await h.request(path, { key })).status).toBe(401)

    const missing = await h.request(`/v1/conversations/${noRecording}/recording`)
    expect(missing.status).toBe(404)
    expect(await missing.json()).toEqual({ error: { message: 'recording not found', type: 'not_found' } })
    expect((await h.request(`/v1/conversations/${noRecording}/recording`)).headers.get('x-cache')).toBe('HIT')
    await h.clock.advance(5_001)
    expect((await h.request(`/v1/conversations/${noRecording}/recording`)).headers.get('x-cache')).toBe('MISS')
  })

  it('re-confirms the key cheaply after the window and serves STALE from disk while the upstream is down', async () => {
    h = await proxyHarness({ dialect })
    const { completed } = await completedAndMissing(h)
    const path = `/v1/conversations/${completed}/recording`
    const original = new Uint8Array(await (await h.request(path)).arrayBuffer())
    await h.clock.advance(120_000)
    const again = await h.request(path)
    expect(again.headers.get('x-cache')).toBe('HIT')
    // Served from disk with its Age (RFC 9111 §5.1), as JSON entries are: a downstream cache took it for new.
    expect(again.headers.get('age')).toBe('120')
    expect(new Uint8Array(await again.arrayBuffer())).toEqual(original)
    await h.clock.advance(120_000)
    await h.stopSandbox()
    const stale = await h.request(path, { headers: { range: 'bytes=0-9' } })
    expect(stale.status).toBe(206)
    expect(stale.headers.get('x-cache')).toBe('STALE')
    expect(stale.headers.get('age')).toBe('240')
    expect(new Uint8Array(await stale.arrayBuffer())).toEqual(original.slice(0, 10))
    const etag = stale.headers.get('etag')!
    const unchanged = await h.request(path, { headers: { 'if-none-match': etag } })
    expect(unchanged.status).toBe(304)
    expect(unchanged.headers.get('age')).toBe('240')
  })

  it('stays within PROXY_RECORDINGS_MAX_BYTES, removing the least recently used files', async () => {
    h = await proxyHarness({ dialect, env: { PROXY_RECORDINGS_MAX_BYTES: String(600_000) } })
    h.sandbox.seedConversations({ apiKey: ACME, agentId: 101, count: 40 })
    const items = (await (await h.direct('/v1/conversations?limit=40')).json()).data as Array<{ conversation_id: string; status: string }>
    const completed = items.filter((c) => c.status === 'completed').map((c) => c.conversation_id)
    let total = 0
    for (const id of completed) {
      const res = await h.request(`/v1/conversations/${id}/recording`)
      total += (await res.arrayBuffer()).byteLength
      await h.clock.advance(1_000)
    }
    expect(total).toBeGreaterThan(600_000)
    const rows = await h.rt.store.db.selectFrom('recordings').select(['size', 'file']).execute()
    expect(rows.reduce((s, r) => s + Number(r.size), 0)).toBeLessThanOrEqual(600_000)
    const files = readdirSync(join(h.rt.dataDir, 'recordings')).filter((f) => f !== 'tmp')
    expect(files.sort()).toEqual([...new Set(rows.map((r) => r.file))].sort())
    expect((await h.request(`/v1/conversations/${completed.at(-1)}/recording`, { method: 'HEAD' })).headers.get('x-cache')).toBe('HIT')
  })
  it('the proxy maintenance removes downloads a killed process left half-written, and leaves live ones', async () => {
    h = await proxyHarness({ dialect })
    const tmp = join(h.rt.dataDir, 'recordings', 'tmp')
    // As `kill -9` mid-download leaves them: one untouched for longer than a live download ever is, one just written to.
    writeFileSync(join(tmp, '4242-deadbeefdeadbeef'), 'RIFF half a recording')
    const past = (Date.now() - ABANDONED_DOWNLOAD_MS - 60_000) / 1000
    utimesSync(join(tmp, '4242-deadbeefdeadbeef'), past, past)
    writeFileSync(join(tmp, '4243-0123456789abcdef'), 'RIFF still arriving')
    const stop = startProxyMaintenance(h.rt)
    try {
      await vi.waitFor(async () => {
        await h!.clock.advance(MAINTENANCE_INTERVAL_MS)
        expect(readdirSync(tmp)).toEqual(['4243-0123456789abcdef'])
      }, { timeout: 10_000, interval: 50 })
    } finally {
      stop()
    }
  })
})
