import { randomBytes } from 'node:crypto'
import { afterEach, expect, it, vi } from 'vitest'
import { MAX_CONVERSATION_ID_LENGTH, MAX_IDEMPOTENCY_KEY_LENGTH, MAX_PHONE_LENGTH } from '../../src/upstream/id-limits.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { phoneCall, proxyHarness, type ProxyHarness } from './helpers.ts'

/**
 * An idempotency key, a conversation id or a customer_phone of thousands of characters was a 500 on Postgres (an
 * index entry past its ~2,700 bytes fails the ledger's insert) and stored on SQLite. Each has a length both take,
 * and past it POST /v1/call is a 400 naming the field, before anything is stored or sent. A GET's cache key holds its
 * path and query: one of kilobytes was never cached on Postgres (each request logged a failed cache write).
 */
const text = (n: number) => randomBytes(n).toString('base64url').slice(0, n)

describeEachDialect('POST /v1/call with values longer than switchboard stores', (dialect) => {
  let h: ProxyHarness | undefined
  afterEach(async () => {
    await h?.close()
    h = undefined
  })

  it('is a 400 naming the field; at the limit it is placed', async () => {
    h = await proxyHarness({ dialect })
    const post = (body: unknown) => h!.request('/v1/call', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    const refused = [
      [phoneCall('+919876543210', { idempotency_key: text(MAX_IDEMPOTENCY_KEY_LENGTH + 1) }), `idempotency_key must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`],
      [phoneCall(`+91 98765 43210 ${'9'.repeat(MAX_PHONE_LENGTH)}`), `customer_phone must be at most ${MAX_PHONE_LENGTH} characters`],
      [phoneCall('+919876543211', { conversation_id: text(MAX_CONVERSATION_ID_LENGTH + 1) }), `conversation_id must be at most ${MAX_CONVERSATION_ID_LENGTH} characters`],
    ] as const
    for (const [body, message] of refused) {
      const res = await post(body)
      expect(res.status).toBe(400)
      expect(await res.json()).toEqual({ error: { message, type: 'invalid_request' } })
    }
    // The header form of the key too.
    const viaHeader = await h.request('/v1/call', { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': text(MAX_IDEMPOTENCY_KEY_LENGTH + 1) }, body: JSON.stringify(phoneCall('+919876543212')) })
    expect(viaHeader.status).toBe(400)
    expect(await h.rt.store.db.selectFrom('calls').select('id').execute()).toEqual([])

    const placed = await post(phoneCall('+919876543213', { idempotency_key: text(MAX_IDEMPOTENCY_KEY_LENGTH) }))
    expect(placed.status).toBe(200)
    expect(await h.rt.store.db.selectFrom('calls').select('idempotency_key').execute()).toEqual([{ idempotency_key: expect.stringMatching(new RegExp(`^.{${MAX_IDEMPOTENCY_KEY_LENGTH}}$`)) }])
  })

  it('a GET with a query of kilobytes is cached like any other (its key hashed), on both', async () => {
    h = await proxyHarness({ dialect })
    const path = `/v1/conversations?agent_id=101&note=${text(3_000)}`
    const first = await h.request(path)
    expect([first.status, first.headers.get('x-cache')]).toEqual([200, 'MISS'])
    const second = await h.request(path)
    expect([second.status, second.headers.get('x-cache')]).toEqual([200, 'HIT'])
    const [{ key }] = await h.rt.store.db.selectFrom('cache_entries').select('key').execute() as [{ key: string }]
    expect(key.length).toBeLessThan(200)
  })

  it('a path holding an id of kilobytes is answered, not cached, and logs no failed cache write', async () => {
    h = await proxyHarness({ dialect })
    const warn = vi.spyOn(h.rt.log, 'warn')
    const path = `/v1/conversations/${text(3_000)}`
    for (let i = 0; i < 2; i++) {
      const res = await h.request(path)
      expect([res.status, res.headers.get('x-cache')]).toEqual([404, 'MISS'])
    }
    expect(warn.mock.calls.filter((call) => call.includes('proxy cache write failed'))).toEqual([])
    expect(await h.rt.store.db.selectFrom('cache_entries').select('key').execute()).toEqual([])
  })
})
