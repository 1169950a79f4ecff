import { mkdtempSync, readdirSync, rmSync, statSync, utimesSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { describe, expect, it, vi } from 'vitest'
import { loadConfig } from '../../src/config/load.ts'
import { openStore } from '../../src/db/connect.ts'
import { ABANDONED_DOWNLOAD_MS, createRecordingCache } from '../../src/proxy/recordings.ts'
import { createRuntime } from '../../src/runtime.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { createSilentLogger } from '../../src/utils/logger.ts'
import { createSeededRandom } from '../../src/utils/random.ts'
import { createTestRuntime } from '../helpers/runtime.ts'
import { ACME, type ProxyHarness } from './helpers.ts'
import { gate, type ScriptedUpstream } from './scripted-upstream.ts'
import { harnessPerTest } from './harness-per-test.ts'

/** Recordings on a MISS stream to the caller as they arrive; the disk cache and its budget never stand in the way. */
describe('proxy recordings: streamed, ranged and budgeted', () => {
  const { scripted } = harnessPerTest('sqlite')
  const audio = (size: number, fill: number) => {
    const bytes = Buffer.alloc(size, fill)
    bytes.write('RIFF', 0)
    return bytes
  }
  const serve = (up: ScriptedUpstream, files: Record<string, Buffer>) =>
    up.answer((req, _body, res) => {
      const id = Object.keys(files).find((name) => req.url!.includes(`/${name}/`))
      if (!id) return false
      res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': String(files[id]!.length), 'content-disposition': `attachment; filename="${id}.wav"` })
      res.end(files[id])
    })
  const rows = (h: ProxyHarness) => h.rt.store.db.selectFrom('recordings').select(['conversation_id', 'size']).orderBy('conversation_id').execute()
  const temporary = (h: ProxyHarness) => readdirSync(join(h.rt.config.dataDir, 'recordings', 'tmp'))

  it('a MISS reaches the caller as the provider sends it, before the download has ended', async () => {
    const { h, up } = await scripted()
    const rest = gate()
    const first = audio(32 * 1024, 1)
    up.answer(async (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': String(first.length * 2) })
      res.write(first)
      await rest.wait
      res.end(audio(32 * 1024, 2))
    })
    const res = await h.request('/v1/conversations/conv_live/recording')
    expect(res.status).toBe(200)
    expect(res.headers.get('x-cache')).toBe('MISS')
    const reader = res.body!.getReader()
    let received = 0
    while (received < first.length) received += (await reader.read()).value!.byteLength
    // The provider still holds the second half back: what the caller has came through as it arrived.
    expect(received).toBe(first.length)
    rest.open()
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      received += value.byteLength
    }
    expect(received).toBe(first.length * 2)
    expect(await rows(h)).toEqual([{ conversation_id: 'conv_live', size: first.length * 2 }])
    expect((await h.request('/v1/conversations/conv_live/recording', { method: 'HEAD' })).headers.get('x-cache')).toBe('HIT')
  })

  it('a recording larger than PROXY_RECORDINGS_MAX_BYTES reaches the caller whole and is not cached', async () => {
    const { h, up } = await scripted({ PROXY_RECORDINGS_MAX_BYTES: '100000' })
    const big = audio(150_000, 1)
    serve(up, { conv_big: big })
    for (let i = 0; i < 2; i++) {
      const res = await h.request('/v1/conversations/conv_big/recording')
      expect(res.status).toBe(200)
      expect(res.headers.get('x-cache')).toBe('MISS')
      expect(res.headers.get('content-disposition')).toBe('attachment; filename="conv_big.wav"')
      expect(Buffer.from(await res.arrayBuffer()).equals(big)).toBe(true)
    }
    expect(up.count('GET', '/v1/conversations/conv_big/recording')).toBe(2)
    await vi.waitFor(() => expect(temporary(h)).toEqual([]))
    expect(await rows(h)).toEqual([])
    // A HEAD is answered from the provider's length, and a Range from the bytes as they pass.
    const head = await h.request('/v1/conversations/conv_big/recording', { method: 'HEAD' })
    expect([head.status, head.headers.get('content-length')]).toEqual([200, '150000'])
    const ranged = await h.request('/v1/conversations/conv_big/recording', { headers: { range: 'bytes=120000-120009' } })
    expect([ranged.status, ranged.headers.get('content-range')]).toEqual([206, 'bytes 120000-120009/150000'])
    expect(Buffer.from(await ranged.arrayBuffer()).equals(big.subarray(120_000, 120_010))).toBe(true)
  })

  it('a recording that alone takes most of the budget is answered whole and kept; the older ones make room', async () => {
    const { h, up } = await scripted({ PROXY_RECORDINGS_MAX_BYTES: '100000' })
    const small = audio(10_000, 1)
    const large = audio(95_000, 2)
    serve(up, { conv_a: small, conv_b: large })
    expect((await (await h.request('/v1/conversations/conv_a/recording')).arrayBuffer()).byteLength).toBe(small.length)
    await h.clock.advance(1_000)
    const res = await h.request('/v1/conversations/conv_b/recording')
    expect(res.status).toBe(200)
    expect(Buffer.from(await res.arrayBuffer()).equals(large)).toBe(true)
    expect(await rows(h)).toEqual([{ conversation_id: 'conv_b', size: large.length }])
    const hit = await h.request('/v1/conversations/conv_b/recording')
    expect(hit.headers.get('x-cache')).toBe('HIT')
    expect(Buffer.from(await hit.arrayBuffer()).equals(large)).toBe(true)
    // Calls' audio is the service user's alone (it was 0644 in a 0755 folder under the checkout's data/).
    const folder = join(h.rt.config.dataDir, 'recordings')
    const kept = readdirSync(folder).filter((f) => f !== 'tmp')
    expect([statSync(folder).mode & 0o777, ...kept.map((f) => statSync(join(folder, f)).mode & 0o777)]).toEqual([0o700, 0o600])
  })

  it('a Range on a MISS is answered from the bytes as they pass; the whole file is kept for the next request', async () => {
    const { h, up } = await scripted()
    const file = audio(64_000, 3)
    serve(up, { conv_r: file })
    const res = await h.request('/v1/conversations/conv_r/recording', { headers: { range: 'bytes=10-19' } })
    expect([res.status, res.headers.get('content-range'), res.headers.get('content-length')]).toEqual([206, 'bytes 10-19/64000', '10'])
    expect(Buffer.from(await res.arrayBuffer()).equals(file.subarray(10, 20))).toBe(true)
    await vi.waitFor(async () => expect(await rows(h)).toEqual([{ conversation_id: 'conv_r', size: file.length }]))
    const suffix = await h.request('/v1/conversations/conv_r/recording', { headers: { range: 'bytes=-5' } })
    expect([suffix.status, suffix.headers.get('x-cache')]).toEqual([206, 'HIT'])
    expect(Buffer.from(await suffix.arrayBuffer()).equals(file.subarray(-5))).toBe(true)
    expect(up.count('GET', '/v1/conversations/conv_r/recording')).toBe(1)
  })

  it('If-Range: the range applies only while the validator is this file’s ETag (RFC 9110 §13.1.5)', async () => {
    const { h, up } = await scripted()
    const file = audio(20_000, 4)
    serve(up, { conv_i: file })
    await (await h.request('/v1/conversations/conv_i/recording')).arrayBuffer()
    const hit = await h.request('/v1/conversations/conv_i/recording', { method: 'HEAD' })
    const etag = hit.headers.get('etag')!
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/)
    const match = await h.request('/v1/conversations/conv_i/recording', { headers: { range: 'bytes=0-9', 'if-range': etag } })
    expect(match.status).toBe(206)
    expect((await match.arrayBuffer()).byteLength).toBe(10)
    for (const other of ['"00000000000000000000000000000000"', 'Wed, 18 Mar 2026 20:00:00 GMT']) {
      const res = await h.request('/v1/conversations/conv_i/recording', { headers: { range: 'bytes=0-9', 'if-range': other } })
      expect(res.status, other).toBe(200)
      expect((await res.arrayBuffer()).byteLength).toBe(file.length)
    }
  })

  it('HEAD ignores Range (RFC 9110 §14.2): it describes the whole file, cached or not', async () => {
    const { h, up } = await scripted()
    serve(up, { conv_h: audio(30_000, 5) })
    for (const cache of ['MISS', 'HIT']) {
      const head = await h.request('/v1/conversations/conv_h/recording', { method: 'HEAD', headers: { range: 'bytes=0-9' } })
      expect([head.status, head.headers.get('content-length'), head.headers.get('content-range'), head.headers.get('x-cache')]).toEqual([200, '30000', null, cache])
    }
    const past = await h.request('/v1/conversations/conv_h/recording', { method: 'HEAD', headers: { range: 'bytes=90000-' } })
    expect(past.status).toBe(200)
  })

  it('a recording asked for with a query goes to the provider as asked, past the cache', async () => {
    const { h, up } = await scripted()
    h.sandbox.seedConversations({ apiKey: ACME, agentId: 101, count: 4 })
    const items = (await (await h.direct('/v1/conversations?limit=4')).json()).data as Array<{ conversation_id: string; status: string }>
    const id = items.find((c) => c.status === 'completed')!.conversation_id
    const res = await h.request(`/v1/conversations/${id}/recording?format=wav`, { headers: { range: 'bytes=0-3' } })
    expect(res.headers.get('x-cache')).toBe('BYPASS')
    // The provider's answer as sent: a 206 with its Content-Range (RFC 9110 §15.3.7), the download's name, its length.
    expect(res.status).toBe(206)
    expect(res.headers.get('content-range')).toMatch(/^bytes 0-3\/\d+$/)
    expect(res.headers.get('content-length')).toBe('4')
    expect(res.headers.get('accept-ranges')).toBe('bytes')
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename=/)
    expect(res.headers.get('etag')).not.toBeNull()
    expect((await res.arrayBuffer()).byteLength).toBe(4)
    expect(up.seen.filter((r) => r.url.includes('/recording')).map((r) => r.url)).toEqual([`/v1/conversations/${id}/recording?format=wav`])
    expect(await rows(h)).toEqual([])
  })

  it('a recording is asked for as it is (identity), and one a provider compresses anyway is served, kept and described by its decoded bytes', async () => {
    const { h, up } = await scripted()
    const file = audio(70_000, 7)
    const asked: Array<string | undefined> = []
    up.answer((req, _body, res) => {
      if (!req.url!.includes('/conv_gz/')) return false
      asked.push(req.headers['accept-encoding'])
      // A CDN that compresses whatever it is asked: its Content-Length counts the gzip bytes.
      const gz = gzipSync(file)
      res.writeHead(200, { 'content-type': 'audio/wav', 'content-encoding': 'gzip', 'content-length': String(gz.length) })
      res.end(gz)
    })
    const res = await h.request('/v1/conversations/conv_gz/recording')
    expect([res.status, res.headers.get('x-cache'), res.headers.get('content-encoding'), res.headers.get('content-length')]).toEqual([200, 'MISS', null, null])
    expect(Buffer.from(await res.arrayBuffer()).equals(file)).toBe(true)
    expect(asked).toEqual(['identity'])
    await vi.waitFor(async () => expect(await rows(h)).toEqual([{ conversation_id: 'conv_gz', size: file.length }]))
    const head = await h.request('/v1/conversations/conv_gz/recording', { method: 'HEAD' })
    expect([head.status, head.headers.get('x-cache'), head.headers.get('content-length')]).toEqual([200, 'HIT', String(file.length)])
    const ranged = await h.request('/v1/conversations/conv_gz/recording', { headers: { range: 'bytes=0-9' } })
    expect([ranged.status, ranged.headers.get('content-range')]).toEqual([206, `bytes 0-9/${file.length}`])
    expect(Buffer.from(await ranged.arrayBuffer()).equals(file.subarray(0, 10))).toBe(true)
  })

  it('a stale answer served for an upstream 5xx carries that answer’s Retry-After and rate-limit headers', async () => {
    const { h, up } = await scripted()
    const first = await h.request('/v1/conversations?limit=5')
    expect(first.headers.get('x-cache')).toBe('MISS')
    await first.text()
    await h.clock.advance(11_000)
    up.answer((_req, _body, res) => {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '30', 'x-ratelimit-remaining': '7' })
      res.end(JSON.stringify({ error: { message: 'maintenance', type: 'internal_error' } }))
    })
    const stale = await h.request('/v1/conversations?limit=5')
    expect(stale.status).toBe(200)
    await stale.text()
    expect([stale.headers.get('x-cache'), stale.headers.get('retry-after'), stale.headers.get('x-ratelimit-remaining')]).toEqual(['STALE', '30', '7'])
  })

  it('POST /v1/call forwards the fields the spec does not list, at the top level and in parameters', async () => {
    const { h, up } = await scripted()
    const res = await h.call({ agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543210', sensitive: true }], from_phone_number: '+918000000000' })
    expect(res.status).toBe(200)
    await res.text()
    const sent = JSON.parse(up.seen.find((r) => r.method === 'POST' && r.url === '/v1/call')!.body) as Record<string, unknown>
    expect(sent).toMatchObject({ from_phone_number: '+918000000000', parameters: [{ name: 'customer_phone', value: '+919876543210', sensitive: true }] })
  })
})

it('a download under way when the service stops ends there: the caller hears of it, and nothing is left in tmp/', async () => {
  const rt = await createTestRuntime()
  try {
    const cache = createRecordingCache(rt)
    let provider: ReadableStreamDefaultController<Uint8Array> | undefined
    // The provider has sent half of what it announced, and holds the rest.
    const body = new ReadableStream<Uint8Array>({ start: (c) => void (provider = c) })
    provider!.enqueue(new Uint8Array(32 * 1024).fill(1))
    const upstream = new Response(null, { headers: { 'content-type': 'audio/wav', 'content-length': String(64 * 1024) } })
    const answer = await cache.passThrough({ tenant: 't', conversationId: 'conv_stop', request: new Request('http://x/'), upstream, body })
    const reader = answer.body!.getReader()
    expect((await reader.read()).value!.byteLength).toBe(32 * 1024)
    const tmp = join(rt.config.dataDir, 'recordings', 'tmp')
    expect(readdirSync(tmp)).toHaveLength(1)
    await cache.close()
    await expect(reader.read()).rejects.toThrow('the service is stopping')
    expect(readdirSync(tmp)).toEqual([])
    expect(await rt.store.db.selectFrom('recordings').selectAll().execute()).toEqual([])
  } finally {
    await rt.close()
  }
})

it('a replica removes its files whose row another replica evicted (the index is shared, the files are each replica’s)', async () => {
  const env = { PROXY_RECORDINGS_MAX_BYTES: '100000' }
  const a = await createTestRuntime({ env })
  const bDir = mkdtempSync(join(tmpdir(), 'sb-data-b-'))
  const store = await openStore(a.store.url)
  const b = await createRuntime(loadConfig({ env: { DATA_DIR: bDir, WEBHOOK_SECRET: 'whsec_test_secret', LOG_LEVEL: 'silent', ...env } }), {
    store,
    skipMigrate: true,
    clock: createManualClock(a.clock.now()),
    random: createSeededRandom(99),
    log: createSilentLogger(),
  })
  try {
    const onA = createRecordingCache(a)
    const onB = createRecordingCache(b)
    const download = async (cache: typeof onA, conversationId: string, fill: number) => {
      const bytes = new Uint8Array(40_000).fill(fill)
      const upstream = new Response(bytes, { headers: { 'content-type': 'audio/wav', 'content-length': String(bytes.length) } })
      const answer = await cache.passThrough({ tenant: 't', conversationId, request: new Request('http://x/'), upstream, body: upstream.body! })
      await answer.arrayBuffer()
    }
    const files = (dir: string) => readdirSync(join(dir, 'recordings')).filter((f) => f !== 'tmp')
    await download(onB, 'conv_1', 1)
    expect(files(bDir)).toHaveLength(1)
    await (a.clock as ReturnType<typeof createManualClock>).advance(1_000)
    await download(onA, 'conv_2', 2)
    await (a.clock as ReturnType<typeof createManualClock>).advance(1_000)
    await download(onA, 'conv_3', 3)
    // A's budget evicted conv_1's row; B's copy of its file is referenced by nothing.
    expect((await a.store.db.selectFrom('recordings').select('conversation_id').orderBy('conversation_id').execute()).map((r) => r.conversation_id)).toEqual(['conv_2', 'conv_3'])
    // A file this young may be one whose row is about to be written: kept.
    expect(await onB.sweepAbandoned()).toBe(0)
    expect(files(bDir)).toHaveLength(1)
    const old = (Date.now() - ABANDONED_DOWNLOAD_MS - 60_000) / 1000
    utimesSync(join(bDir, 'recordings', files(bDir)[0]!), old, old)
    expect(await onB.sweepAbandoned()).toBe(1)
    expect(files(bDir)).toEqual([])
    // A's files, referenced, stay whatever their age.
    for (const file of files(a.config.dataDir)) utimesSync(join(a.config.dataDir, 'recordings', file), old, old)
    expect(await onA.sweepAbandoned()).toBe(0)
    expect(files(a.config.dataDir)).toHaveLength(2)
  } finally {
    await b.close()
    await store.close()
    await a.close()
    rmSync(bDir, { recursive: true, force: true })
  }
})
