import { afterEach, describe, expect, it, vi } from 'vitest'
import { connect } from 'node:net'
import { captureLogs } from '../helpers/log-capture.ts'
import { ACME, phoneCall, proxyHarness, type ProxyHarness } from './helpers.ts'

/**
 * POST /v1/call bodies a client can send by mistake, each refused (400 naming the field) before anything is stored or
 * sent — found by probing the running service: each placed the call and then failed, or failed in a way that told
 * the client nothing.
 */
describe('POST /v1/call: what is refused before the call is placed', () => {
  let h: ProxyHarness | undefined
  afterEach(async () => {
    await h?.close()
    h = undefined
  })
  const post = (body: string, headers: Record<string, string> = {}) =>
    h!.request('/v1/call', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })
  const placed = async () => (await h!.rt.store.db.selectFrom('calls').select('idempotency_key').execute()).map((r) => r.idempotency_key)

  // The key is echoed in X-Idempotency-Key; a header holds bytes, so a key beyond printable ASCII placed the call and
  // then answered 500 (and so did every retry with it). Spaces at either end are trimmed off a header: a retry sending
  // the key as the Idempotency-Key header, as the README advises, was another key and placed a second call.
  it('an idempotency key a header cannot carry: beyond printable ASCII, or with spaces at either end', async () => {
    h = await proxyHarness()
    for (const key of ['ключ-1', '😀-1', 'line\nbreak', 'tab\there', 'a\u0000b', '\ud800x', ' tk123 ', 'tk123 ']) {
      const res = await post(JSON.stringify(phoneCall('+919876543210', { idempotency_key: key })))
      expect(res.status, JSON.stringify(key)).toBe(400)
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/^idempotency_key (must be printable ASCII|must not begin or end with a space|contains U\+0000|holds half of a UTF-16 surrogate pair)/)
    }
    expect(await placed()).toEqual([])
    // Printable ASCII with a space inside is a key like any other: placed, echoed, and a retry is a 409 carrying it.
    const first = await post(JSON.stringify(phoneCall('+919876543210', { idempotency_key: 'order 42 / retry #1' })))
    expect([first.status, first.headers.get('x-idempotency-key')]).toEqual([200, 'order 42 / retry #1'])
    const again = await post(JSON.stringify(phoneCall('+919876543210')), { 'idempotency-key': 'order 42 / retry #1' })
    expect([again.status, again.headers.get('x-idempotency-key')]).toEqual([409, 'order 42 / retry #1'])
    expect(await placed()).toEqual(['order 42 / retry #1'])
  })

  // Placed, but its outcome webhook then carries the U+0000 and the receiver refuses it (a body holding one cannot be
  // stored on Postgres): the call's result never arrived but through reconciliation.
  it('a call parameter holding U+0000', async () => {
    h = await proxyHarness()
    const res = await post(JSON.stringify(phoneCall('+919876543210', { parameters: [{ name: 'customer_phone', value: '+919876543210' }, { name: 'name', value: 'As\u0000ha' }] })))
    expect(res.status).toBe(400)
    expect(await res.json()).toEqual({ error: { type: 'invalid_request', message: 'parameters[1].value contains U+0000 (a NUL character); remove it' } })
    expect(await placed()).toEqual([])
  })

  // Placed, and then its outcome webhook carried the value back: stored on SQLite, and on Postgres every event listing
  // that reached that event answered 500 (its json type refuses the escape) for as long as the event was kept.
  it('a value holding half of a surrogate pair, in a parameter, metadata or retry_context', async () => {
    h = await proxyHarness()
    const half = (extra: Record<string, unknown>) => JSON.stringify(phoneCall('+919876543210', extra))
    const cases: Array<[string, string]> = [
      [half({ parameters: [{ name: 'customer_phone', value: '+919876543210' }, { name: '名前', value: '値\ud800' }] }), 'parameters[1].value'],
      [half({ metadata: { note: '\udfffx' } }), 'metadata.note'],
      [half({ retry_context: { retry_initial_message: 'hi \ud83d' } }), 'retry_context.retry_initial_message'],
    ]
    for (const [body, field] of cases) {
      const res = await post(body)
      expect(res.status, field).toBe(400)
      expect(await res.json()).toEqual({ error: { type: 'invalid_request', message: `${field} holds half of a UTF-16 surrogate pair (an unpaired \\ud800–\\udfff); send whole characters` } })
    }
    expect(await placed()).toEqual([])
    // A whole pair is a character like any other.
    expect((await post(half({ metadata: { note: '😀' } }))).status).toBe(200)
  })

  // 6,000 levels within the 1 MB limit: in retry_context a 500 (the ledger's JSON), elsewhere a 502 that named the
  // provider's address and marked it down for /readyz, after three tries.
  it('a body nested deeper than any call needs', async () => {
    h = await proxyHarness()
    const deep = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`
    for (const [field, value] of [['retry_context', `{"collected_data":${deep(6_000)}}`], ['extra', `[${deep(6_000)}]`]] as const) {
      const body = JSON.stringify(phoneCall('+919876543210')).replace(/}$/, `,"${field}":${value}}`)
      const res = await post(body)
      expect(res.status, field).toBe(400)
      expect(await res.json()).toEqual({ error: { type: 'invalid_request', message: 'request body is nested deeper than 128 levels' } })
    }
    expect(await placed()).toEqual([])
    expect((await post(JSON.stringify(phoneCall('+919876543210', { retry_context: { collected_data: JSON.parse(deep(20)) } })))).status).toBe(200)
  })

  // A client hanging up mid-body was logged as switchboard's own failure ("proxy request failed", level error).
  it('a body the client stops sending midway: nothing placed, logged at info', async () => {
    h = await proxyHarness()
    const logs = captureLogs('info')
    h.rt.log = logs.log
    // A raw connection that declares 1,000 bytes, sends 30 and ends.
    const { hostname, port } = new URL(h.proxyUrl)
    const socket = connect(Number(port), hostname)
    await new Promise<void>((resolve) => socket.once('connect', resolve))
    socket.end(`POST /v1/call HTTP/1.1\r\nhost: ${hostname}\r\nauthorization: Bearer ${ACME}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"agent_id":101,"parameters":[`)
    await vi.waitFor(() => expect(logs.find(/aborted by the client/)).toEqual([expect.objectContaining({ level: 30, path: '/v1/call' })]))
    expect(logs.find(/proxy request failed/)).toEqual([])
    expect(await placed()).toEqual([])
  })
})
