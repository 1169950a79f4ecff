import { readdirSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import type { PipelineEvent } from '../../src/events/hooks.ts'
import { CACHE_TTL_MS } from '../../src/proxy/cache-policy.ts'
import { cacheInvalidationConsumer } from '../../src/proxy/invalidate-consumer.ts'
import { createJsonCache } from '../../src/proxy/json-cache.ts'
import type { WebhookEvent } from '../../src/upstream/schemas.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { ACME, phoneCall, proxyHarness, withClock, type ProxyHarness } from './helpers.ts'

const MiB = 1024 * 1024

type Script = (req: IncomingMessage, body: Buffer, res: ServerResponse) => void

/**
 * A provider stand-in on 127.0.0.1 that answers as the test scripts it, recording every request (with its
 * body) so a test can see what the proxy sent. Requests the script does not take are relayed to the
 * sandbox.
 */
async function scriptedUpstream(sandboxUrl: string) {
  const seen: Array<{ method: string; url: string; body: string }> = []
  let script: Script | undefined
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', async () => {
      const body = Buffer.concat(chunks)
      seen.push({ method: req.method ?? '', url: req.url ?? '', body: body.toString('utf8') })
      if (script) return script(req, body, res)
      const upstream = await fetch(`${sandboxUrl}${req.url}`, {
        method: req.method,
        headers: Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k)).map(([k, v]) => [k, String(v)])),
        body: body.length ? body : undefined,
      })
      res.writeHead(upstream.status, Object.fromEntries(upstream.headers))
      res.end(Buffer.from(await upstream.arrayBuffer()))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  return {
    url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`,
    seen,
    answer(next: Script) {
      script = next
    },
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  }
}

type Upstream = Awaited<ReturnType<typeof scriptedUpstream>>

/** The idempotency key the proxy sent upstream in the n-th POST /v1/call it made. */
function sentKey(up: Upstream, n: number): unknown {
  const posts = up.seen.filter((r) => r.method === 'POST' && r.url === '/v1/call')
  return (JSON.parse(posts[n]!.body) as { idempotency_key?: unknown }).idempotency_key
}

describeEachDialect('proxy edges (2)', (dialect) => {
  let h: ProxyHarness | undefined
  let up: Upstream | undefined
  let rt: TestRuntime | undefined
  afterEach(async () => {
    await h?.close()
    await up?.close()
    await rt?.close()
    h = undefined
    up = undefined
    rt = undefined
  })

  const scripted = async (env: Record<string, string> = {}) => {
    h = await proxyHarness({ dialect, env, upstreamUrl: async (sandboxUrl) => (up = await scriptedUpstream(sandboxUrl)).url })
    return { h, up: up! }
  }
  const post = (h: ProxyHarness, body: BodyInit, headers: Record<string, string> = {}) =>
    h.request('/v1/call', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })

  it('POST /v1/call counts a chunked body as it streams and answers 413 past 1 MiB, without waiting for its end', async () => {
    const { h, up } = await scripted()
    // 2 MiB of spaces, then a body that never ends: a proxy that reads it all before counting never answers.
    let sent = 0
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 2 * MiB) return new Promise<void>(() => {})
        sent += 64 * 1024
        controller.enqueue(new Uint8Array(64 * 1024).fill(0x20))
      },
    })
    const aborted = new AbortController()
    const res = await Promise.race([
      fetch(`${h.proxyUrl}/v1/call`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ACME}`, 'content-type': 'application/json' },
        body: endless,
        duplex: 'half',
        signal: aborted.signal,
      } as RequestInit),
      new Promise<'no answer'>((r) => setTimeout(() => r('no answer'), 3_000).unref()),
    ])
    expect(res).toBeInstanceOf(Response)
    const answer = res as Response
    expect(answer.status).toBe(413)
    expect(answer.headers.get('x-cache')).toBe('BYPASS')
    expect(answer.headers.get('content-type')).toBe('application/json')
    const streamed = await answer.json()
    aborted.abort()
    // The same answer as for a declared Content-Length over the limit.
    const declared = await post(h, ' '.repeat(MiB + 1))
    expect(declared.status).toBe(413)
    const expected = { error: { message: `request body is larger than ${MiB} bytes`, type: 'invalid_request' } }
    expect(await declared.json()).toEqual(expected)
    expect(streamed).toEqual(expected)
    expect(up.seen.filter((r) => r.url === '/v1/call')).toEqual([])

    // A chunked body under the limit is read whole and placed.
    const json = new TextEncoder().encode(JSON.stringify(phoneCall('+919876543210')))
    const small = await fetch(`${h.proxyUrl}/v1/call`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ACME}`, 'content-type': 'application/json' },
      body: new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(json.subarray(0, 10))
          controller.enqueue(json.subarray(10))
          controller.close()
        },
      }),
      duplex: 'half',
    } as RequestInit)
    expect(small.status).toBe(200)
  })

  // The proxy adds an idempotency_key to a body without one: a body of 1 MiB, which it takes, came to the sandbox
  // ~60 bytes over the sandbox's own 1 MiB and was refused 400 "larger than 1024 KB" — no call placed.
  it('a call body of exactly 1 MiB without a key is placed through the sandbox', async () => {
    h = await proxyHarness({ dialect })
    const call = { ...phoneCall('+919876543210'), metadata: '' }
    const size = (body: object) => Buffer.byteLength(JSON.stringify(body))
    call.metadata = 'm'.repeat(MiB - size(call))
    expect(size(call)).toBe(MiB)
    const res = await post(h, JSON.stringify(call))
    expect(res.status, await res.clone().text().then((t) => t.slice(0, 200))).toBe(200)
    expect(res.headers.get('x-idempotency-key')).toBeTruthy()
  })

  it('a 204, 205 or 304 streamed through keeps its status and headers, with no body (not a 502)', async () => {
    const { h, up } = await scripted()
    for (const status of [204, 205, 304]) {
      up.answer((_req, _body, res) => {
        res.writeHead(status, { 'x-ratelimit-remaining': '41', 'content-type': 'application/json' })
        res.end()
      })
      for (const method of ['DELETE', 'POST']) {
        const res = await h.request('/v1/agents/101/widgets', { method, headers: { 'content-type': 'application/json' }, body: '{}' })
        expect(res.status, `${method} ${status}`).toBe(status)
        expect(res.headers.get('x-ratelimit-remaining')).toBe('41')
        expect(res.headers.get('x-cache')).toBe('BYPASS')
        expect(await res.text()).toBe('')
      }
    }
  })

  it('POST /v1/call answers with the idempotency key used on every answer, errors included, so a retry cannot place the call twice', async () => {
    // A short deadline: the timeout case below waits it out for real, once per attempt.
    const { h, up } = await scripted({ UPSTREAM_TIMEOUT_MS: '300' })
    // The provider's 500, on every attempt: the call may or may not exist.
    up.answer((_req, _body, res) => {
      res.writeHead(500, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: 'Unexpected server error', type: 'internal_error' } }))
    })
    const failed = await withClock(h.clock, post(h, JSON.stringify(phoneCall('+919876543210'))))
    expect(failed.status).toBe(500)
    const key = failed.headers.get('x-idempotency-key')
    expect(key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(sentKey(up, 0)).toBe(key)
    const rows = await h.rt.store.db.selectFrom('calls').select(['idempotency_key', 'status']).execute()
    expect(rows).toEqual([{ idempotency_key: key, status: 'failed' }])

    // The retry the README asks for: same key, so the provider (not a second call) decides.
    up.answer(() => {}) // no answer at all: the timeout (504) must carry the key too
    const retried = await withClock(h.clock, post(h, JSON.stringify(phoneCall('+919876543210')), { 'idempotency-key': key! }), 1_000, 5_000)
    expect(retried.status).toBe(504)
    expect(retried.headers.get('x-idempotency-key')).toBe(key)
    expect(sentKey(up, up.seen.filter((r) => r.url === '/v1/call').length - 1)).toBe(key)

    // Unreachable (502), a key of the caller's own.
    await up.close()
    const unreachable = await withClock(h.clock, post(h, JSON.stringify(phoneCall('+919876543211', { idempotency_key: 'order-77' }))))
    expect(unreachable.status).toBe(502)
    expect(unreachable.headers.get('x-idempotency-key')).toBe('order-77')
    // A local 409 names the key it refused (here: one whose call the ledger holds as placed); a local 400
    // comes before any key is chosen.
    await h.rt.store.db.updateTable('calls').set({ status: 'initiated' }).where('idempotency_key', '=', 'order-77').execute()
    const duplicate = await post(h, JSON.stringify(phoneCall('+919876543211', { idempotency_key: 'order-77' })))
    expect(duplicate.status).toBe(409)
    expect(duplicate.headers.get('x-idempotency-key')).toBe('order-77')
    const invalid = await post(h, JSON.stringify({ agent_id: 101, parameters: [] }))
    expect(invalid.status).toBe(400)
    expect(invalid.headers.get('x-idempotency-key')).toBeNull()
  }, 20_000)

  it('a recording fetched for the first time answers an unsatisfiable Range with a JSON 416, typed as JSON', async () => {
    const { h } = await scripted()
    h.sandbox.seedConversations({ apiKey: ACME, agentId: 101, count: 6 })
    const items = (await (await h.direct('/v1/conversations?limit=6')).json()).data as Array<{ conversation_id: string; status: string }>
    const id = items.find((c) => c.status === 'completed')!.conversation_id
    const path = `/v1/conversations/${id}/recording`
    const first = await h.request(path, { headers: { range: 'bytes=999999999-' } })
    expect(first.status).toBe(416)
    expect(first.headers.get('x-cache')).toBe('MISS')
    expect(first.headers.get('content-type')).toBe('application/json')
    expect((await first.json()).error.type).toBe('invalid_request')
    // The file was stored all the same; the 200 that follows keeps the provider's audio type.
    const next = await h.request(path)
    expect(next.headers.get('x-cache')).toBe('HIT')
    expect(next.headers.get('content-type')).toMatch(/^audio\//)
    await next.arrayBuffer()
  })

  it('POST /v1/call: a provider error without its error body is typed by status, as the spec names the types', async () => {
    const { h, up } = await scripted()
    // The 401 last: a key refused is refused without asking the provider until the key window has passed.
    const cases: Array<[number, string, string]> = [
      [404, '', 'not_found'],
      [429, '<html><body>Too Many Requests</body></html>', 'rate_limit_exceeded'],
      [409, '', 'duplicate_request'],
      [400, '<html><body>Bad Request</body></html>', 'invalid_request'],
      [422, '{"message":"not the provider shape"}', 'invalid_request'],
      [503, '<html><body>503 Service Unavailable</body></html>', 'internal_error'],
      [401, '<html><body>401 Authorization Required</body></html>', 'authentication_error'],
    ]
    // The key accepted lately (a read): the calls are the only requests the answers below meet.
    expect((await h.request('/v1/conversations?limit=1')).status).toBe(200)
    // The provider's own error body passes as sent.
    up.answer((_req, _body, res) => {
      res.writeHead(404, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: 'agent not found', type: 'not_found' } }))
    })
    const own = await post(h, JSON.stringify(phoneCall('+919876543210')))
    expect(await own.json()).toEqual({ error: { message: 'agent not found', type: 'not_found' } })
    for (const [status, body, type] of cases) {
      up.answer((_req, _body, res) => {
        res.writeHead(status, { 'content-type': body.startsWith('<') ? 'text/html' : 'application/json' })
        res.end(body)
      })
      const res = await withClock(h.clock, post(h, JSON.stringify(phoneCall('+919876543210'))))
      expect(res.status, `${status}`).toBe(status)
      expect(res.headers.get('content-type')).toBe('application/json')
      const answer = (await res.json()) as { error: { type: string; message: string } }
      expect(answer.error.type, `${status}`).toBe(type)
      expect(answer.error.message).toBe(`HTTP ${status} with no error body`)
    }
  }, 20_000)

  it('3xx answers keep Location as sent when it is an http(s) URL or a path, on reads, recordings and streamed requests', async () => {
    const { h, up } = await scripted()
    const redirectTo = (status: number, location: string) =>
      up.answer((_req, _body, res) => {
        res.writeHead(status, { location, 'content-type': 'text/plain' })
        res.end('moved')
      })
    // The test's own client must not follow the redirect either, to see it.
    const requests: Array<[string, RequestInit]> = [
      ['/v1/conversations?limit=5', { redirect: 'manual' }],
      ['/v1/conversations/conv_moved/recording', { redirect: 'manual' }],
      ['/v1/transcription/jobs', { redirect: 'manual', method: 'POST', headers: { 'content-type': 'multipart/form-data; boundary=x' }, body: '--x--\r\n' }],
    ]
    const passed: Array<[number, string]> = [
      [302, 'https://cdn.example.com/recordings/a.wav?sig=abc%2F'],
      [301, '/v1/conversations?limit=5&offset=0'],
      [307, 'http://127.0.0.1:9/elsewhere'],
      [308, '/relative/path'],
    ]
    for (const [status, location] of passed) {
      redirectTo(status, location)
      for (const [path, init] of requests) {
        const res = await h.request(path, init)
        expect(res.status, `${status} ${path}`).toBe(status)
        expect(res.headers.get('location'), `${status} ${path}`).toBe(location)
        await res.arrayBuffer()
      }
    }
    // Another scheme, or a protocol-relative "path" (another host, to a browser), is not passed on.
    for (const location of ['javascript:alert(1)', '//evil.example/x', '/\\evil.example/x', 'ftp://files.example/a']) {
      redirectTo(302, location)
      for (const [path, init] of requests) {
        const res = await h.request(path, init)
        expect(res.status).toBe(302)
        expect(res.headers.get('location'), `${location} ${path}`).toBeNull()
        await res.arrayBuffer()
      }
    }
    // Not a redirect: no Location either.
    up.answer((_req, _body, res) => {
      res.writeHead(200, { location: '/v1/elsewhere', 'content-type': 'application/json' })
      res.end('{"data":[],"total":0}')
    })
    const ok = await h.request('/v1/batch-calls')
    expect(ok.status).toBe(200)
    expect(ok.headers.get('location')).toBeNull()
  })

  it('a streamed upload keeps its declared Content-Length upstream (chunked only without one)', async () => {
    const { h, up } = await scripted()
    const framing: Array<{ length?: string; chunked: boolean }> = []
    up.answer((req, _body, res) => {
      framing.push({ length: req.headers['content-length'], chunked: req.headers['transfer-encoding'] === 'chunked' })
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{"data":{}}')
    })
    const csv = 'customer_phone\n+919876543210\n'
    expect((await h.request('/v1/agents/101/widgets', { method: 'POST', headers: { 'content-type': 'text/csv', 'content-length': String(csv.length) }, body: csv })).status).toBe(200)
    const stream = new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(new TextEncoder().encode(csv)), c.close()) })
    expect((await h.request('/v1/agents/101/widgets', { method: 'POST', headers: { 'content-type': 'text/csv' }, body: stream, duplex: 'half' } as RequestInit)).status).toBe(200)
    expect(framing).toEqual([{ length: String(csv.length), chunked: false }, { length: undefined, chunked: true }])
  })

  it('a streamed answer that stalls halfway is cut off after UPSTREAM_TIMEOUT_MS of silence, not held open for ever', async () => {
    const { h, up } = await scripted({ UPSTREAM_TIMEOUT_MS: '300' })
    up.answer((_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' })
      res.write('{"data":')
    })
    const res = await h.request('/v1/agents/101/widgets', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    expect(res.status).toBe(200)
    const started = Date.now()
    // Real time, unavoidably (the deadline is a socket's): the body errors once 300 ms pass without a byte.
    await expect(res.text()).rejects.toThrow()
    expect(Date.now() - started).toBeLessThan(2_500)
  }, 20_000)

  it('a recording download may take longer than UPSTREAM_TIMEOUT_MS while bytes flow; a stall aborts it and nothing is cached', async () => {
    const { h, up } = await scripted({ UPSTREAM_TIMEOUT_MS: '300' })
    const chunk = Buffer.alloc(16 * 1024, 7)
    // Real time, unavoidably (the deadline is a socket's): 8 chunks 100 ms apart, 800 ms in all.
    up.answer((_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': String(chunk.length * 8) })
      let n = 0
      const timer = setInterval(() => {
        res.write(chunk)
        if (++n === 8) {
          clearInterval(timer)
          res.end()
        }
      }, 100)
    })
    const slow = await h.request('/v1/conversations/conv_slow/recording')
    expect(slow.status).toBe(200)
    expect(slow.headers.get('x-cache')).toBe('MISS')
    expect((await slow.arrayBuffer()).byteLength).toBe(chunk.length * 8)

    // One chunk, then nothing: the caller has the first bytes at once (the answer streams), then the download is
    // cut off after 300 ms of silence — the caller's body ends short of its Content-Length, an error it sees — and
    // no file or row is kept.
    up.answer((_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': String(chunk.length * 8) })
      res.write(chunk)
    })
    const started = Date.now()
    const stalled = await h.request('/v1/conversations/conv_stalled/recording')
    expect(stalled.status).toBe(200)
    expect(stalled.headers.get('content-length')).toBe(String(chunk.length * 8))
    await expect(stalled.arrayBuffer()).rejects.toThrow()
    expect(Date.now() - started).toBeLessThan(2_500)
    const rows = await h.rt.store.db.selectFrom('recordings').select('conversation_id').execute()
    expect(rows).toEqual([{ conversation_id: 'conv_slow' }])
    const dir = join(h.rt.config.dataDir, 'recordings')
    expect(readdirSync(join(dir, 'tmp'))).toEqual([])
    expect(readdirSync(dir).filter((f) => f !== 'tmp')).toHaveLength(1)
  }, 20_000)

  it('the invalidation consumer clears the batches of every agent in a batch of events, past the first 400', async () => {
    rt = await createTestRuntime({ dialect })
    const json = createJsonCache(rt)
    const agents = Array.from({ length: 900 }, (_, i) => 1000 + i)
    for (const agent of agents) {
      await json.put({ key: `t:/v1/batch-calls/${agent}?`, tenant: 't', plan: { kind: 'batch', ttlMs: CACHE_TTL_MS.batch, resourceId: String(agent), agentId: agent }, status: 200, headers: {}, body: '{}' })
    }
    await json.put({ key: 't:/v1/batch-calls/1?', tenant: 't', plan: { kind: 'batch', ttlMs: CACHE_TTL_MS.batch, resourceId: '1', agentId: 1 }, status: 200, headers: {}, body: '{}' })
    const event = (agent: number, i: number): PipelineEvent => ({
      eventId: `evt_${i}`,
      eventType: 'call.completed',
      target: 'formant',
      source: 'webhook',
      receivedAt: 0,
      event: {
        event_id: `evt_${i}`,
        event_type: 'call.completed',
        timestamp: '2026-03-18T20:53:30Z',
        data: {
          call: {
            agent_id: agent,
            call_parameters: {},
            conversation_id: `conv_${i}`,
            duration_seconds: 10,
            started_at: null,
            ended_at: null,
            failure_reason: null,
            from_phone: null,
            to_phone: '+919876543210',
            recording_url: null,
            status: 'completed',
            trace_id: `trace_${i}`,
          },
          results: {},
        },
      } satisfies WebhookEvent,
    })
    await cacheInvalidationConsumer(rt)(agents.map(event))
    const left = await rt.store.db.selectFrom('cache_entries').select('agent_id').execute()
    // Agent 1 had no event: its batch stays. Every agent of the events lost its own.
    expect(left).toEqual([{ agent_id: 1 }])
  })
})
