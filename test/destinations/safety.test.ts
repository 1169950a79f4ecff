import { describe, expect, it, vi } from 'vitest'
import { isPrivateAddress } from '../../src/destinations/address-guard.ts'
import { sendOnce } from '../../src/destinations/http-send.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { cliEnv, runCli } from '../webhooks/helpers.ts'
import { closedAfterEach, createForwardHarness, startSink, destination, makeEvent, WAIT, type ForwardHarness } from './helpers.ts'

describe('address guard', () => {
  it('treats loopback, private, link-local, CGNAT, unspecified and IPv4-mapped forms as private', () => {
    for (const a of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', '::', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '[::1]',
      // Not global unicast: IPv4-compatible and IPv4-translated forms, site-local, discard, multicast, NAT64 to a private IPv4.
      '::127.0.0.1', '::7f00:1', '::ffff:0:7f00:1', 'fec0::1', '100::1', 'ff02::1', '64:ff9b::a00:1', '5f00::1',
      // Inside global unicast but not public: Teredo, ORCHID, 6to4, documentation.
      '2001::1', '2001:20::1', '2002:7f00:1::1', '2001:db8::1', '3fff::1', '0:0:0:0:0:0:0:1']) {
      expect(isPrivateAddress(a), a).toBe(true)
    }
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700::1111', '2a00:1450:4001::200e', '::ffff:8.8.8.8', '64:ff9b::808:808']) expect(isPrivateAddress(a), a).toBe(false)
  })

  it('refuses a name that resolves to a private address, checked on the resolved address', async () => {
    const s = await startSink()
    try {
      const url = s.url.replace('127.0.0.1', 'localhost')
      const clock = createManualClock()
      const base = { url, body: '{}', headers: {}, timeoutMs: 2_000, allowHttp: true, followRedirects: 0, clock }
      const refused = await sendOnce({ ...base, allowPrivate: false })
      expect(refused).toMatchObject({ status: null, blocked: true })
      expect(refused.error).toMatch(/private address/)
      expect(s.requests).toHaveLength(0)
      expect((await sendOnce({ ...base, url: url.replace('http:', 'https:'), allowPrivate: false })).blocked).toBe(true)
      expect((await sendOnce({ ...base, allowHttp: false, allowPrivate: true })).error).toMatch(/https required/)
      expect((await sendOnce({ ...base, allowPrivate: true })).status).toBe(204)
    } finally {
      await s.close()
    }
  })
})

describe('redirects', () => {
  it('are followed only as far as followRedirects allows, each hop a POST of the same signed body', async () => {
    const target = await startSink()
    const hop2 = await startSink((_n, _req, res) => res.writeHead(308, { location: target.url }).end())
    const hop1 = await startSink((_n, _req, res) => res.writeHead(307, { location: hop2.url }).end())
    try {
      const clock = createManualClock()
      const base = { url: hop1.url, body: '{"a":1}', headers: { 'webhook-id': 'msg_1' }, timeoutMs: 2_000, allowHttp: true, allowPrivate: true, clock }
      const one = await sendOnce({ ...base, headers: { ...base.headers }, followRedirects: 1 })
      expect(one).toMatchObject({ status: 308, error: `redirect to ${target.url} not followed` })
      expect(target.requests).toHaveLength(0)
      const two = await sendOnce({ ...base, headers: { ...base.headers }, followRedirects: 2 })
      expect(two.status).toBe(204)
      expect(target.requests.map((r) => [r.body, r.headers['webhook-id'], r.headers['content-type']])).toEqual([['{"a":1}', 'msg_1', 'application/json']])
    } finally {
      for (const s of [target, hop1, hop2]) await s.close()
    }
  })

  it('carry the URL\'s credentials and the configured headers to the same origin only; another origin gets the signature alone', async () => {
    const elsewhere = await startSink()
    // Same host, another port: another origin.
    const away = await startSink((_n, _req, res) => res.writeHead(307, { location: elsewhere.url }).end())
    const home = await startSink((_n, req, res) => (req.url === '/hooks' ? res.writeHead(307, { location: '/final' }).end() : res.writeHead(204).end()))
    try {
      const signature = { 'webhook-id': 'msg_1', 'webhook-timestamp': '1773160200', 'webhook-signature': 'v1,c2ln' }
      const send = (url: string, headers: Record<string, string>) =>
        sendOnce({ url: url.replace('http://', 'http://ops:secret@'), body: '{}', headers: { ...headers, ...signature }, timeoutMs: 2_000, allowHttp: true, allowPrivate: true, followRedirects: 1, clock: createManualClock() })
      const basic = `Basic ${Buffer.from('ops:secret').toString('base64')}`

      expect((await send(home.url, { 'x-api-key': 'key-1' })).status).toBe(204)
      expect(home.requests.map((r) => [r.headers.authorization, r.headers['x-api-key'], r.headers['webhook-signature']])).toEqual([
        [basic, 'key-1', 'v1,c2ln'],
        [basic, 'key-1', 'v1,c2ln'],
      ])

      expect((await send(away.url, { 'x-api-key': 'key-1' })).status).toBe(204)
      expect((await send(away.url, { Authorization: 'Bearer own-token' })).status).toBe(204)
      expect(away.requests.map((r) => r.headers.authorization)).toEqual([basic, 'Bearer own-token'])
      expect(away.requests[0]!.headers['x-api-key']).toBe('key-1')
      for (const r of elsewhere.requests) {
        expect(r.headers.authorization).toBeUndefined()
        expect(r.headers['x-api-key']).toBeUndefined()
        expect(r.headers).toMatchObject({ ...signature, 'content-type': 'application/json' })
      }
      expect(elsewhere.requests).toHaveLength(2)
    } finally {
      for (const s of [elsewhere, away, home]) await s.close()
    }
  })
})

// Real HTTP on a shared, busy machine.
vi.setConfig({ testTimeout: 60_000 })

describeEachDialect('destinations: safety', (dialect) => {
  let h: ForwardHarness | undefined
  const sink = closedAfterEach(() => {
    const current = h
    h = undefined
    return current
  })

  it('without ALLOW_PRIVATE_DESTINATIONS a loopback sink is never contacted; the attempt says why', async () => {
    const s = await sink()
    h = await createForwardHarness(dialect, [destination(s)], { env: { ALLOW_PRIVATE_DESTINATIONS: '' } })
    await h.ingest([makeEvent()])
    await vi.waitFor(async () => expect((await h!.status())[0]?.attempts).toBe(1), WAIT)
    expect(s.requests).toHaveLength(0)
    const { rt } = h
    const [attempt] = await rt.store.db.selectFrom('destination_attempts').selectAll().execute()
    expect(attempt).toMatchObject({ status: null, result: 'retry' })
    expect(attempt!.error).toMatch(/127\.0\.0\.1 is a private address/)
    const tested = await runCli(['destinations', 'test', 'crm'], cliEnv(rt, { DESTINATIONS: JSON.stringify([destination(s)]) }))
    expect(tested.code).toBe(1)
    expect(tested.out).toMatch(/^crm: failed in \d+ ms: 127\.0\.0\.1 is a private address/)
    expect(s.requests).toHaveLength(0)
  })

  it('credentials in a destination URL go out as Basic auth (unless headers set one) and are never shown', async () => {
    const s = await sink()
    const url = s.url.replace('http://', 'http://ops:p%40ss@')
    const withAuth = [destination(url), destination(url, { name: 'own', headers: { Authorization: 'Bearer own-token' } })]
    h = await createForwardHarness(dialect, withAuth)
    await h.ingest([makeEvent()])
    await vi.waitFor(async () => expect((await h!.status()).map((r) => r.status)).toEqual(['delivered', 'delivered']), WAIT)
    expect(s.requests.map((r) => r.headers.authorization).sort()).toEqual([`Basic ${Buffer.from('ops:p@ss').toString('base64')}`, 'Bearer own-token'])
    const listed = await runCli(['destinations', 'list', '--json'], cliEnv(h.rt, { DESTINATIONS: JSON.stringify(withAuth) }))
    expect(listed.code).toBe(0)
    expect(listed.out).toContain('http://***@127.0.0.1')
    expect(listed.out).not.toContain('p%40ss')
  })

  it('413, redirects and a slow-loris sink are failed attempts that cannot stall deliveries to others', async () => {
    const tooLarge = await sink((_n, _req, res) => res.writeHead(413).end())
    const target = await sink()
    const redirect = await sink((_n, _req, res) => res.writeHead(307, { location: target.url }).end())
    // Headers at once, then one byte of body now and then, never finishing.
    const loris = await sink((_n, _req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.write('.')
    })
    const stalled = await sink((_n, req) => req.socket.write('')) // accepts, never answers
    const healthy = await sink()
    const huge = await sink((_n, _req, res) => {
      res.writeHead(500)
      res.end(Buffer.alloc(2 * 1024 * 1024, 97))
    })
    h = await createForwardHarness(dialect, [
      destination(tooLarge, { name: 'too-large' }),
      destination(redirect, { name: 'redirect' }),
      destination(stalled, { name: 'stalled' }),
      destination(huge, { name: 'huge' }),
      destination(healthy, { name: 'healthy' }),
    ])
    await h.ingest(Array.from({ length: 5 }, () => makeEvent()))
    await vi.waitFor(() => expect(healthy.requests).toHaveLength(5), WAIT)
    const attempts = async (name: string) =>
      h!.rt.store.db
        .selectFrom('destination_attempts as a')
        .innerJoin('destination_deliveries as d', 'd.id', 'a.delivery_id')
        .select(['a.status', 'a.result', 'a.error', 'a.response'])
        .where('d.destination', '=', name)
        .execute()
    await vi.waitFor(async () => {
      expect(await attempts('too-large')).toHaveLength(5)
      expect(await attempts('redirect')).toHaveLength(5)
      expect(await attempts('huge')).toHaveLength(5)
    }, WAIT)
    expect((await attempts('too-large')).every((a) => a.status === 413 && a.result === 'retry')).toBe(true)
    expect((await attempts('redirect')).every((a) => a.status === 307 && a.result === 'retry' && /not followed/.test(a.error ?? ''))).toBe(true)
    expect(target.requests).toHaveLength(0)
    expect((await attempts('huge')).every((a) => a.status === 500 && (a.response ?? '').length === 1024)).toBe(true)
    // The stalled sink holds only its own requests; the overall timeout (service clock) ends them.
    expect(await attempts('stalled')).toHaveLength(0)
    await h.clock.advance(2_000)
    await vi.waitFor(async () => expect(await attempts('stalled')).toHaveLength(5), WAIT)
    expect((await attempts('stalled')).every((a) => a.status === null && /timed out after 2000 ms/.test(a.error ?? ''))).toBe(true)

    // A body that trickles forever after a 200: the answer counts, the reading stops at the deadline.
    const lorisDest = [destination(loris, { name: 'loris' })]
    await h.close()
    h = await createForwardHarness(dialect, lorisDest)
    await h.ingest([makeEvent()])
    await vi.waitFor(() => expect(loris.requests).toHaveLength(1), WAIT)
    await h.clock.advance(2_000)
    await vi.waitFor(async () => expect((await h!.status())[0]?.status).toBe('delivered'), WAIT)
  })
})
