import { afterEach, expect, it } from 'vitest'
import { describeEachDialect } from '../helpers/db.ts'
import { ACME, phoneCall, proxyHarness, type ProxyHarness } from './helpers.ts'

/** The proxy at the edges where a client written for the provider would notice it is not the provider. */
describeEachDialect('proxy drop-in edges', (dialect) => {
  let h: ProxyHarness | undefined
  afterEach(async () => {
    await h?.close()
    h = undefined
  })

  const post = (h: ProxyHarness, body: BodyInit, headers: Record<string, string> = {}) =>
    h.request('/v1/call', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })

  it('POST /v1/call honours an Idempotency-Key header: two identical POSTs place one call', async () => {
    h = await proxyHarness({ dialect })
    const body = JSON.stringify(phoneCall('+919876543210'))
    const first = await post(h, body, { 'idempotency-key': 'order-1234' })
    expect(first.status).toBe(200)
    expect(first.headers.get('x-idempotency-key')).toBe('order-1234')
    const second = await post(h, body, { 'idempotency-key': 'order-1234' })
    expect(second.status).toBe(409)
    expect(second.headers.get('x-cache')).toBe('BYPASS')
    expect(await second.json()).toEqual({ error: { message: 'idempotency key already used', type: 'duplicate_request' } })
    expect(h.sandbox.stats().callsAccepted).toBe(1)
    const rows = await h.rt.store.db.selectFrom('calls').select(['idempotency_key']).execute()
    expect(rows).toEqual([{ idempotency_key: 'order-1234' }])

    // The same key in both places is one key.
    const both = await post(h, JSON.stringify(phoneCall('+919876543211', { idempotency_key: 'order-5678' })), { 'idempotency-key': 'order-5678' })
    expect(both.status).toBe(200)
    expect(both.headers.get('x-idempotency-key')).toBe('order-5678')
    // The header sent twice with one key (joined "k, k" on the way in) is that key.
    const again = await post(h, JSON.stringify(phoneCall('+919876543212')), { 'idempotency-key': 'order-9012, order-9012' })
    expect([again.status, again.headers.get('x-idempotency-key')]).toEqual([200, 'order-9012'])
  })

  it('POST /v1/call refuses a header and body key that disagree, naming both, before reaching upstream', async () => {
    h = await proxyHarness({ dialect })
    const before = h.sandbox.stats().requests
    const res = await post(h, JSON.stringify(phoneCall('+919876543210', { idempotency_key: 'body-key' })), { 'idempotency-key': 'header-key' })
    expect(res.status).toBe(400)
    expect(res.headers.get('x-cache')).toBe('BYPASS')
    const { error } = await res.json()
    expect(error.type).toBe('invalid_request')
    expect(error.message).toContain('Idempotency-Key header ("header-key")')
    expect(error.message).toContain('body field idempotency_key ("body-key")')
    // The header sent twice arrives joined: two keys are refused, one key twice is that key.
    const twice = await post(h, JSON.stringify(phoneCall('+919876543210')), { 'idempotency-key': 'key-a, key-b' })
    expect(await twice.json()).toEqual({ error: { message: 'Idempotency-Key header was sent more than once with different values ("key-a, key-b"): send one key (a key holding ", " goes in the body field idempotency_key)', type: 'invalid_request' } })
    const empty = await post(h, JSON.stringify(phoneCall('+919876543210')), { 'idempotency-key': '  ' })
    expect(await empty.json()).toEqual({ error: { message: 'Idempotency-Key header must not be empty', type: 'invalid_request' } })
    expect(h.sandbox.stats().requests).toBe(before)
    expect(await h.rt.store.db.selectFrom('calls').selectAll().execute()).toEqual([])
  })

  it('POST /v1/call refuses invalid UTF-8 with a 400 naming the field, and never places the call', async () => {
    h = await proxyHarness({ dialect })
    const before = h.sandbox.stats().requests
    const bytes = (...parts: Array<string | number[]>) =>
      new Uint8Array(Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : Buffer.from(p)))))
    const cases: Array<[Uint8Array<ArrayBuffer>, string]> = [
      [bytes('{"agent_id":101,"parameters":[{"name":"customer_phone","value":"+9198765432', [0xff], '"}]}'), 'parameters[0].value is not valid UTF-8'],
      [bytes('{"agent_id":101,"parameters":[{"name":"customer_phone","value":"+919876543210"},{"name":"first_name","value":"Jos', [0xe9], '"}]}'), 'parameters[1].value is not valid UTF-8'],
      [bytes('{"agent_id":101,"parameters":[{"name":"customer_phone","value":"+919876543210"}],"metadata":{"n', [0xc0, 0xaf], 'te":"x"}}'), 'a field name in metadata is not valid UTF-8'],
      [bytes('{"agent_id":101,', [0xfe], '"parameters":[]}'), 'request body is not valid UTF-8'],
    ]
    for (const [body, message] of cases) {
      const res = await post(h, body)
      expect(res.status, message).toBe(400)
      expect(res.headers.get('x-cache')).toBe('BYPASS')
      const { error } = await res.json()
      expect(error.type).toBe('invalid_request')
      expect(error.message).toMatch(new RegExp(`^${message.replace(/[[\]().]/g, '\\$&')} \\(invalid byte 0x[0-9a-f]{2} at offset \\d+\\)$`))
      expect(error.message).not.toContain('\uFFFD')
    }
    expect(h.sandbox.stats().requests).toBe(before)
    expect(await h.rt.store.db.selectFrom('calls').selectAll().execute()).toEqual([])

    // A well-formed U+FFFD is text like any other.
    const fine = await post(h, JSON.stringify(phoneCall('+919876543210', { metadata: { note: 'x\uFFFDy' } })))
    expect(fine.status).toBe(200)
  })

  it('405 answers carry Allow (RFC 9110), as the provider’s do', async () => {
    h = await proxyHarness({ dialect })
    for (const [method, path, allow] of [
      ['DELETE', '/v1/conversations', 'GET, HEAD'],
      ['PUT', '/v1/call', 'POST'],
      ['GET', '/v1/call', 'POST'],
    ] as const) {
      const res = await h.request(path, { method })
      const direct = await fetch(`${h.sandboxUrl}${path}`, { method, headers: { authorization: `Bearer ${ACME}` } })
      expect(res.status, `${method} ${path}`).toBe(405)
      expect(res.headers.get('allow')).toBe(allow)
      expect(res.headers.get('allow')).toBe(direct.headers.get('allow'))
      expect(res.headers.get('x-cache')).toBe('BYPASS')
      expect(await res.json()).toEqual(await direct.json())
    }
  })

  it('recordings keep Content-Disposition and Cache-Control: MISS, HIT from disk, Range and HEAD', async () => {
    h = await proxyHarness({ dialect })
    h.sandbox.seedConversations({ apiKey: ACME, agentId: 101, count: 3 })
    const items = (await (await h.direct('/v1/conversations')).json()).data as Array<{ conversation_id: string; status: string }>
    const id = items.find((c) => c.status === 'completed')!.conversation_id
    const path = `/v1/conversations/${id}/recording`
    const upstream = await h.direct(path)
    const disposition = upstream.headers.get('content-disposition')
    const cacheControl = upstream.headers.get('cache-control')
    expect(disposition).toBe(`attachment; filename="${id}.wav"`)
    expect(cacheControl).toMatch(/max-age/)

    const answers = [
      await h.request(path),
      await h.request(path),
      await h.request(path, { headers: { range: 'bytes=0-99' } }),
      await h.request(path, { method: 'HEAD' }),
    ]
    expect(answers.map((a) => [a.status, a.headers.get('x-cache')])).toEqual([[200, 'MISS'], [200, 'HIT'], [206, 'HIT'], [200, 'HIT']])
    for (const answer of answers) {
      expect(answer.headers.get('content-disposition')).toBe(disposition)
      expect(answer.headers.get('cache-control')).toBe(cacheControl)
      await answer.arrayBuffer()
    }
  })

  it('a malformed path gets the provider’s error shape with X-Cache: BYPASS, not h3’s', async () => {
    h = await proxyHarness({ dialect })
    for (const path of ['/v1/conversations/%ff%fe', '/v1/conversations/%ff%fe/recording', '/v1/batch-calls/%zz', '/v1/%']) {
      const res = await h.request(path)
      expect(res.status, path).toBe(400)
      expect(res.headers.get('x-cache')).toBe('BYPASS')
      expect(res.headers.get('content-type')).toBe('application/json')
      expect(await res.json()).toEqual({ error: { message: `malformed path: ${path} is not valid percent-encoded UTF-8`, type: 'invalid_request' } })
    }
    // Counted by their X-Cache as every proxy answer is: these never reach the proxy's route.
    expect(await h.rt.metrics.metrics()).toContain('switchboard_proxy_cache_results_total{result="BYPASS"} 4\n')
    // The sandbox alone answers in the provider's shape too.
    const alone = await h.direct('/v1/conversations/%ff%fe')
    expect(alone.status).toBe(400)
    expect((await alone.json()).error.type).toBe('invalid_request')
  })
})
