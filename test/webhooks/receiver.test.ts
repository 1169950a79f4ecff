import { createHmac, randomBytes } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { serve } from 'h3'
import Database from 'better-sqlite3'
import { COMMIT_DEADLINE_MS } from '../../src/webhooks/inbox.ts'
import { drainDue, signFormant, signStandard, webhookHealth } from '../../src/webhooks/index.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { cliEnv, countEvents, createHarness, makeEvent, runCli, SECRET, type Harness } from './helpers.ts'

async function expectError(res: Response, status: number, type: string): Promise<string> {
  expect(res.status).toBe(status)
  const body = (await res.json()) as { error: { message: string; type: string } }
  expect(body.error.type).toBe(type)
  expect(typeof body.error.message).toBe('string')
  return body.error.message
}

describeEachDialect('webhook receiver', (dialect) => {
  let h: Harness
  afterEach(async () => {
    await h?.close()
  })

  describe('answers', () => {
    it('204 after storing the raw body, ids and audit headers (never the signature)', async () => {
      h = await createHarness(dialect)
      const event = makeEvent()
      const body = JSON.stringify(event, null, 3) // unusual formatting must be kept byte for byte
      const res = await h.post(body, {
        'x-formantai-signature': signFormant(body, SECRET),
        'x-formantai-timestamp': String(h.clock.now() / 1000),
        'x-formantai-event-id': event.event_id,
        'user-agent': 'FormantAI-Webhooks/1.0',
      })
      expect(res.status).toBe(204)
      expect(res.headers.get('x-switchboard-duplicate')).toBeNull()
      const row = await h.rt.store.db.selectFrom('webhook_events').selectAll().executeTakeFirstOrThrow()
      expect(row).toMatchObject({
        event_id: event.event_id, event_type: 'call.completed', target: 'formant', source: 'webhook', status: 'pending',
        conversation_id: event.data.call.conversation_id, trace_id: event.data.call.trace_id, agent_id: 101,
        received_at: h.clock.now(), duplicates: 0,
      })
      expect(row.body).toBe(body)
      const headers = JSON.parse(row.headers) as Record<string, string>
      expect(headers['user-agent']).toBe('FormantAI-Webhooks/1.0')
      expect(headers['x-formantai-event-id']).toBe(event.event_id)
      expect(JSON.stringify(headers)).not.toContain('sha256=')
      expect(Object.keys(headers)).not.toContain('x-formantai-signature')
    })

    it('a duplicate is 204 with X-Switchboard-Duplicate and counted, not stored twice', async () => {
      h = await createHarness(dialect)
      const event = makeEvent()
      expect((await h.send(event)).status).toBe(204)
      const again = await h.send(event)
      expect(again.status).toBe(204)
      expect(again.headers.get('x-switchboard-duplicate')).toBe('true')
      expect(await countEvents(h.rt)).toBe(1)
      const row = await h.rt.store.db.selectFrom('webhook_events').select('duplicates').executeTakeFirstOrThrow()
      expect(row.duplicates).toBe(1)
    })

    it('ten concurrent copies of one event: exactly one stored, nine flagged duplicate', async () => {
      h = await createHarness(dialect)
      const event = makeEvent()
      const responses = await Promise.all(Array.from({ length: 10 }, () => h.send(event)))
      expect(responses.map((r) => r.status)).toEqual(Array(10).fill(204))
      expect(responses.filter((r) => r.headers.get('x-switchboard-duplicate') === 'true')).toHaveLength(9)
      expect(await countEvents(h.rt)).toBe(1)
      const row = await h.rt.store.db.selectFrom('webhook_events').select('duplicates').executeTakeFirstOrThrow()
      expect(row.duplicates).toBe(9)
    })

    it('many different events arriving together are all stored (group commit)', async () => {
      h = await createHarness(dialect)
      const responses = await Promise.all(Array.from({ length: 120 }, () => h.send(makeEvent())))
      expect(responses.every((r) => r.status === 204 && !r.headers.has('x-switchboard-duplicate'))).toBe(true)
      expect(await countEvents(h.rt)).toBe(120)
    })

    it('the event id and type may come from the headers when the body lacks them', async () => {
      h = await createHarness(dialect)
      const { event_id: _id, event_type: _type, ...rest } = makeEvent()
      const res = await h.send(rest, { headers: { 'x-formantai-event-id': 'evt_from_header', 'x-formantai-event-type': 'call.busy' } })
      expect(res.status).toBe(204)
      const row = await h.rt.store.db.selectFrom('webhook_events').selectAll().executeTakeFirstOrThrow()
      expect([row.event_id, row.event_type]).toEqual(['evt_from_header', 'call.busy'])
      // ...and is processed as the call event it is, not dead for want of them in the body.
      expect(await drainDue(h.rt)).toEqual([expect.objectContaining({ eventId: 'evt_from_header', status: 'processed' })])
      // A numeric event_id (stored as text) too.
      const numeric = await h.send({ ...makeEvent(), event_id: 4242 as unknown as string })
      expect(numeric.status).toBe(204)
      expect(await drainDue(h.rt)).toEqual([expect.objectContaining({ eventId: '4242', status: 'processed' })])
      // One JSON cannot carry exactly (past 2^53) has lost digits: refused, not stored as another event's duplicate.
      const signedPost = (body: string) => h.post(body, { 'x-formantai-signature': signFormant(body, SECRET), 'x-formantai-timestamp': String(h.clock.now() / 1000) })
      for (const id of ['1234567890123456789', '1234567890123456788', '1.5']) {
        const body = JSON.stringify({ ...makeEvent(), event_id: 0 }).replace('"event_id":0', `"event_id":${id}`)
        expect(await expectError(await signedPost(body), 400, 'invalid_request')).toMatch(/send it as a string/)
      }
      expect(await countEvents(h.rt)).toBe(2)
    })

    // A timestamp header sent twice with one value (a proxy adding what was there) reaches the receiver joined "t, t":
    // refused as "must be whole Unix seconds". Two values that differ are still refused.
    it('a timestamp header sent twice with the same value is that value; two different ones are refused', async () => {
      h = await createHarness(dialect)
      const body = JSON.stringify(makeEvent())
      const t = String(h.clock.now() / 1000)
      expect((await h.post(body, { 'x-formantai-signature': signFormant(body, SECRET), 'x-formantai-timestamp': `${t}, ${t}` })).status).toBe(204)
      const other = JSON.stringify(makeEvent())
      expect(await expectError(await h.post(other, { 'x-formantai-signature': signFormant(other, SECRET), 'x-formantai-timestamp': `${t}, ${Number(t) - 5}` }), 401, 'authentication_error')).toMatch(/must be whole Unix seconds/)
    })

    // 10,000 deep was stored and processed, and then its event page, its admin JSON and `events show` failed (JSON.stringify
    // ran out of stack); 100,000 deep went dead. Brackets inside strings are text, not nesting.
    it('a signed body nested deeper than 128 levels is a 400, not a stack overflow; one at 128 with brackets in its strings is stored', async () => {
      h = await createHarness(dialect)
      const signedPost = (body: string) => h!.post(body, { 'x-formantai-signature': signFormant(body, SECRET), 'x-formantai-timestamp': String(h!.clock.now() / 1000) })
      for (const depth of [100_000, 10_000, 128]) {
        const body = `{"event_id":"evt_deep_${depth}","event_type":"call.completed","x":${'['.repeat(depth)}"\\u0000"${']'.repeat(depth)}}`
        expect(await expectError(await signedPost(body), 400, 'invalid_request')).toBe('body is nested deeper than 128 levels')
      }
      const event = makeEvent({ event_id: 'evt_deep_ok', data: { results: { note: '[[[{{{'.repeat(100), nested: JSON.parse(`${'['.repeat(125)}1${']'.repeat(125)}`) as unknown } } })
      expect((await h.send(event)).status).toBe(204)
      expect(await drainDue(h.rt)).toEqual([expect.objectContaining({ eventId: 'evt_deep_ok', status: 'processed' })])
    })

    // JSON carries half of a surrogate pair as "\ud800"; no database stores it as it came (SQLite kept the bytes and gave back
    // three U+FFFD): an event with one in its id was answered 204, then its outcome never matched its row — pending
    // forever, /readyz degraded, not found by its page, replay or the CLI. One in the conversation id failed the read
    // model. And an event id of "." or ".." is a path segment every URL drops: its page was the events list, and its
    // Replay button posted to "replay all matching".
    it('an id that is not well-formed text, or is "." or "..", is a 400 naming the field; nothing is stored', async () => {
      h = await createHarness(dialect)
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{ ...makeEvent(), event_id: 'evt_half\ud800' }, /^event id must be well-formed text/],
        [{ ...makeEvent(), event_id: '\udfffevt' }, /^event id must be well-formed text/],
        [{ ...makeEvent(), event_id: '.' }, /not "\." or "\.\."$/],
        [{ ...makeEvent(), event_id: '..' }, /not "\." or "\.\."$/],
        [{ ...makeEvent(), event_type: 'call.\ud800' }, /^event type must be well-formed text/],
        [makeEvent({ call: { conversation_id: 'conv-\ud800' } }), /^data\.call\.conversation_id must be well-formed text/],
        [makeEvent({ call: { trace_id: '\udc00-trace' } }), /^data\.call\.trace_id must be well-formed text/],
        [makeEvent({ call: { status: 's'.repeat(101) } }), /^data\.call\.status is longer than 100 characters$/],
      ]
      // No id header: the body's id decides (a header could not carry these anyway).
      const send = (event: Record<string, unknown>) => h.send(event, { headers: { 'x-formantai-event-id': '' } })
      for (const [event, message] of cases) expect(await expectError(await send(event), 400, 'invalid_request')).toMatch(message)
      // Anywhere else in the body too: on Postgres the event listings read the body as json, which refuses the escape,
      // and one such event made every listing reaching it a 500 for as long as it was kept.
      for (const event of [makeEvent({ data: { results: { intent: '\ud800' } } }), makeEvent({ call: { call_parameters: { customer_phone: '+919876543210', ['k\udc00']: 'v' } } })]) {
        expect(await expectError(await send(event), 400, 'invalid_request')).toMatch(/^body contains half of a UTF-16 surrogate pair/)
      }
      // The field is named, as POST /v1/call names it.
      expect(await expectError(await send(makeEvent({ data: { results: { intent: 'x\udfff' } } })), 400, 'invalid_request')).toMatch(/ at data\.results\.intent, /)
      expect(await expectError(await send(makeEvent({ data: { results: { intent: 'a\u0000b' } } })), 400, 'invalid_request')).toMatch(/^body contains U\+0000 \(a NUL character\) at data\.results\.intent, /)
      expect(await countEvents(h.rt)).toBe(0)
      // A whole pair is text like any other, and so are dots within an id.
      for (const event of [{ ...makeEvent(), event_id: 'evt_😀' }, { ...makeEvent(), event_id: '...' }, makeEvent({ call: { conversation_id: 'conv-😀' } })]) {
        expect((await send(event)).status).toBe(204)
      }
      expect((await drainDue(h.rt)).map((o) => o.status)).toEqual(['processed', 'processed', 'processed'])
    })

    it('400 for a body that is not a JSON object, or has no event id or type', async () => {
      h = await createHarness(dialect)
      const signedPost = (body: string | Uint8Array, headers: Record<string, string> = {}) =>
        h.post(body, { 'x-formantai-signature': signFormant(Buffer.from(body), SECRET), 'x-formantai-timestamp': String(h.clock.now() / 1000), ...headers })
      for (const body of ['[1,2]', 'null', '"text"', '42', '{"event_id":', '', 'not json']) {
        await expectError(await signedPost(body, { 'x-formantai-event-id': 'evt_x', 'x-formantai-event-type': 'call.completed' }), 400, 'invalid_request')
      }
      expect(await expectError(await signedPost(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d])), 400, 'invalid_request')).toBe('body is not valid UTF-8')
      // An encoded surrogate (CESU-8) and an overlong form are not UTF-8 either.
      expect(await expectError(await signedPost(new Uint8Array([0x7b, 0xed, 0xa0, 0x80, 0x7d])), 400, 'invalid_request')).toBe('body is not valid UTF-8')
      expect(await expectError(await signedPost(new Uint8Array([0x7b, 0xc0, 0xaf, 0x7d])), 400, 'invalid_request')).toBe('body is not valid UTF-8')
      expect(await expectError(await signedPost('{"event_type":"call.completed"}'), 400, 'invalid_request')).toMatch(/event id/)
      expect(await expectError(await signedPost('{"event_id":"evt_1"}'), 400, 'invalid_request')).toMatch(/event type/)
      expect(await expectError(await signedPost('{"event_id":"","event_type":"call.completed"}'), 400, 'invalid_request')).toMatch(/event id/)
      expect(await countEvents(h.rt)).toBe(0)
    })

    it('404 for an unknown target', async () => {
      h = await createHarness(dialect)
      const body = JSON.stringify(makeEvent())
      await expectError(await h.post(body, { 'x-formantai-signature': signFormant(body, SECRET) }, 'nope'), 404, 'not_found')
    })

    it('404 for a target named like an Object.prototype member (toString, constructor, __proto__)', async () => {
      h = await createHarness(dialect)
      const body = JSON.stringify(makeEvent())
      for (const name of ['toString', 'constructor', 'hasOwnProperty', '__proto__']) {
        await expectError(await h.post(body, { 'x-formantai-signature': signFormant(body, SECRET) }, name), 404, 'not_found')
      }
      expect(await countEvents(h.rt)).toBe(0)
    })

    it('413 past WEBHOOK_MAX_BYTES, also when the body streams without a Content-Length', async () => {
      h = await createHarness(dialect, { WEBHOOK_MAX_BYTES: '2048' })
      // Exactly the limit is accepted; one byte more is not.
      const sized = (bytes: number, id: string) => {
        const base = JSON.stringify(makeEvent({ event_id: id, data: { results: { padding: '' } } }))
        return base.replace('"padding":""', `"padding":"${'x'.repeat(bytes - Buffer.byteLength(base))}"`)
      }
      const exact = sized(2048, 'evt_exact')
      expect(Buffer.byteLength(exact)).toBe(2048)
      expect((await h.post(exact, { 'x-formantai-signature': signFormant(exact, SECRET), 'x-formantai-timestamp': String(h.clock.now() / 1000) })).status).toBe(204)
      const over = sized(2049, 'evt_over')
      await expectError(await h.post(over, { 'x-formantai-signature': signFormant(over, SECRET), 'x-formantai-timestamp': String(h.clock.now() / 1000) }), 413, 'payload_too_large')
      // Chunked: no Content-Length to trust; the limit is counted while reading.
      const server = serve(h.app, { port: 0, hostname: '127.0.0.1', silent: true, gracefulShutdown: false })
      await server.ready()
      try {
        const stream = new ReadableStream<Uint8Array>({
          start(controller) {
            for (let i = 0; i < 8; i++) controller.enqueue(new TextEncoder().encode('x'.repeat(512)))
            controller.close()
          },
        })
        const res = await fetch(`${server.url!.replace(/\/$/, '')}/webhooks/formant`, {
          method: 'POST', body: stream, headers: { 'content-type': 'application/json', 'x-formantai-signature': 'sha256=00' }, duplex: 'half',
        } as RequestInit)
        await expectError(res, 413, 'payload_too_large')
      } finally {
        await server.close(true)
      }
      expect(await countEvents(h.rt)).toBe(1)
    })

    it('503 + Retry-After when storage cannot commit, and 204 again once it can', async () => {
      h = await createHarness(dialect)
      await sql`ALTER TABLE webhook_events RENAME TO webhook_events_away`.execute(h.rt.store.db)
      const event = makeEvent()
      const res = await h.send(event)
      await expectError(res, 503, 'unavailable')
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
      await sql`ALTER TABLE webhook_events_away RENAME TO webhook_events`.execute(h.rt.store.db)
      expect((await h.send(event)).status).toBe(204)
      expect(await countEvents(h.rt)).toBe(1)
    })
    it('a commit that hangs is answered 503 at each delivery\'s own deadline, and lands later as the retry\'s duplicate, never a loss', async () => {
      h = await createHarness(dialect)
      // Another connection holds the write lock, so the inbox's commit waits (as behind a stuck disk or database).
      let release: () => Promise<void>
      if (dialect === 'sqlite') {
        const holder = new Database(h.rt.store.sqlite!.name)
        holder.exec('BEGIN IMMEDIATE')
        release = async () => {
          holder.exec('ROLLBACK')
          holder.close()
        }
      } else {
        const client = await h.rt.store.pool!.connect()
        await client.query('BEGIN')
        await client.query('LOCK TABLE webhook_events IN ACCESS EXCLUSIVE MODE')
        release = async () => {
          await client.query('ROLLBACK')
          client.release()
        }
      }
      const turns = async (n: number) => {
        for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve))
      }
      const first = makeEvent()
      const second = makeEvent()
      const timersBefore = h.clock.pending()
      const firstAnswer = h.send(first)
      // The deadline is armed once the delivery is verified and handed to the inbox.
      for (let i = 0; i < 1000 && h.clock.pending() === timersBefore; i++) await turns(1)
      expect(h.clock.pending()).toBeGreaterThan(timersBefore)
      // A second delivery 3 s later gets its own 5 s, not what is left of the first one's.
      await h.clock.advance(3_000)
      let secondStatus = 0
      const secondAnswer = h.send(second).then((res) => {
        secondStatus = res.status
        return res
      })
      await turns(100)
      await h.clock.advance(COMMIT_DEADLINE_MS - 3_000)
      const res = await firstAnswer
      expect(await expectError(res, 503, 'unavailable')).toMatch(/retry later/)
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
      await turns(20)
      expect(secondStatus).toBe(0)
      await h.clock.advance(3_000)
      await expectError(await secondAnswer, 503, 'unavailable')
      // The lock goes away: the commits that were waiting land, and the provider's retries are their duplicates.
      await release()
      for (let i = 0; i < 2000 && (await countEvents(h.rt)) < 2; i++) await new Promise((resolve) => setTimeout(resolve, 1))
      expect(await countEvents(h.rt)).toBe(2)
      for (const event of [first, second]) {
        const retry = await h.send(event)
        expect(retry.status).toBe(204)
        expect(retry.headers.get('x-switchboard-duplicate')).toBe('true')
      }
      expect(await countEvents(h.rt)).toBe(2)
    })
  })

  describe('provider signature (X-FormantAI-Signature)', () => {
    const cases: Array<[string, (good: string) => string | undefined]> = [
      ['missing header', () => undefined],
      ['empty header', () => ''],
      ['wrong prefix', (good) => good.replace('sha256=', 'sha1=')],
      ['no prefix', (good) => good.slice('sha256='.length)],
      ['truncated', (good) => good.slice(0, -2)],
      ['one hex digit short', (good) => good.slice(0, -1)],
      ['overlong', (good) => good + 'ab'],
      ['non-hex', (good) => good.slice(0, -2) + 'zz'],
      // Right length, a pair in the middle not hex (Node's hex decoding stops there: a short digest).
      ['non-hex in the middle', (good) => good.slice(0, 20) + 'zz' + good.slice(22)],
      ['a space inside', (good) => good.slice(0, 20) + ' ' + good.slice(21)],
      ['empty digest', () => 'sha256='],
      ['upper-case prefix', (good) => good.replace('sha256=', 'SHA256=')],
      ['one altered digit', (good) => good.slice(0, -1) + (good.endsWith('0') ? '1' : '0')],
      ['garbage', () => '\u00e9\u00e9 ,,, sha256=='],
    ]
    for (const [name, mutate] of cases) {
      it(`401 for ${name}`, async () => {
        h = await createHarness(dialect)
        const body = JSON.stringify(makeEvent())
        const signature = mutate(signFormant(body, SECRET))
        const headers: Record<string, string> = { 'x-formantai-timestamp': String(h.clock.now() / 1000) }
        if (signature !== undefined) headers['x-formantai-signature'] = signature
        await expectError(await h.post(body, headers), 401, 'authentication_error')
        expect(await countEvents(h.rt)).toBe(0)
      })
    }

    it('accepts the digest in upper-case hex digits', async () => {
      h = await createHarness(dialect)
      const body = JSON.stringify(makeEvent())
      const digest = signFormant(body, SECRET).slice('sha256='.length).toUpperCase()
      const res = await h.post(body, { 'x-formantai-signature': `sha256=${digest}`, 'x-formantai-timestamp': String(h.clock.now() / 1000) })
      expect(res.status).toBe(204)
    })

    it('401 when one byte of the body is altered', async () => {
      h = await createHarness(dialect)
      const body = JSON.stringify(makeEvent())
      const altered = body.replace('"agent_id":101', '"agent_id":102')
      expect(altered).not.toBe(body)
      await expectError(await h.post(altered, { 'x-formantai-signature': signFormant(body, SECRET), 'x-formantai-timestamp': String(h.clock.now() / 1000) }), 401, 'authentication_error')
    })

    it('verifies a multibyte UTF-8 body over its bytes and stores it unchanged', async () => {
      h = await createHarness(dialect)
      const event = makeEvent({ data: { results: { note: 'नमस्ते 👋 — café' } } })
      const bytes = Buffer.from(JSON.stringify(event), 'utf8')
      const res = await h.post(bytes, { 'x-formantai-signature': signFormant(bytes, SECRET), 'x-formantai-timestamp': String(h.clock.now() / 1000) })
      expect(res.status).toBe(204)
      const row = await h.rt.store.db.selectFrom('webhook_events').select('body').executeTakeFirstOrThrow()
      expect(Buffer.from(row.body, 'utf8').equals(bytes)).toBe(true)
    })

    it('accepts any configured secret during rotation, and rejects others', async () => {
      h = await createHarness(dialect, { WEBHOOK_SECRET: 'whsec_new_one, whsec_old_one' })
      expect((await h.send(makeEvent(), { secret: 'whsec_old_one' })).status).toBe(204)
      expect((await h.send(makeEvent(), { secret: 'whsec_new_one' })).status).toBe(204)
      await expectError(await h.send(makeEvent(), { secret: SECRET }), 401, 'authentication_error')
      // Several signatures in one header: any match is enough.
      const body = JSON.stringify(makeEvent())
      const both = `${signFormant(body, 'whsec_unknown')},${signFormant(body, 'whsec_old_one')}`
      expect((await h.post(body, { 'x-formantai-signature': both, 'x-formantai-timestamp': String(h.clock.now() / 1000) })).status).toBe(204)
    })
  })

  describe('timestamp tolerance (both directions, injected clock)', () => {
    const at = async (offsetSeconds: number | string) => {
      const body = JSON.stringify(makeEvent())
      const ts = typeof offsetSeconds === 'string' ? offsetSeconds : String(h.clock.now() / 1000 + offsetSeconds)
      return h.post(body, { 'x-formantai-signature': signFormant(body, SECRET), 'x-formantai-timestamp': ts })
    }
    it('accepts exactly ±tolerance and rejects one second beyond', async () => {
      h = await createHarness(dialect, { WEBHOOK_TOLERANCE_SECONDS: '300' })
      expect((await at(300)).status).toBe(204)
      expect((await at(-300)).status).toBe(204)
      expect((await at(0)).status).toBe(204)
      await expectError(await at(301), 401, 'authentication_error')
      await expectError(await at(-301), 401, 'authentication_error')
      expect(await countEvents(h.rt)).toBe(3)
    })
    it('compares whole seconds: a timestamp exactly the tolerance old is taken whatever the milliseconds of the clock', async () => {
      h = await createHarness(dialect, { WEBHOOK_TOLERANCE_SECONDS: '300' })
      await h.clock.advance(999)
      const second = Math.floor(h.clock.now() / 1000)
      const at = async (ts: number) => {
        const body = JSON.stringify(makeEvent())
        return h.post(body, { 'x-formantai-signature': signFormant(body, SECRET), 'x-formantai-timestamp': String(ts) })
      }
      expect((await at(second - 300)).status).toBe(204)
      expect((await at(second + 300)).status).toBe(204)
      await expectError(await at(second - 301), 401, 'authentication_error')
      await expectError(await at(second + 301), 401, 'authentication_error')
    })
    it('rejects non-integer and missing timestamps', async () => {
      h = await createHarness(dialect)
      const now = h.clock.now() / 1000
      for (const ts of [`${now}.5`, 'abc', '-1', `${now}e0`, ' ', '1e9', '0x10']) await expectError(await at(ts), 401, 'authentication_error')
      const body = JSON.stringify(makeEvent())
      await expectError(await h.post(body, { 'x-formantai-signature': signFormant(body, SECRET) }), 401, 'authentication_error')
    })
    it('follows the injected clock', async () => {
      h = await createHarness(dialect, { WEBHOOK_TOLERANCE_SECONDS: '60' })
      const body = JSON.stringify(makeEvent())
      const headers = { 'x-formantai-signature': signFormant(body, SECRET), 'x-formantai-timestamp': String(h.clock.now() / 1000) }
      await h.clock.advance(61_000)
      await expectError(await h.post(body, headers), 401, 'authentication_error')
    })
  })

  describe('named targets', () => {
    const stdSecret = `whsec_${randomBytes(32).toString('base64')}`
    const targets = JSON.stringify({
      std: { scheme: 'standard', secrets: stdSecret },
      gh: { scheme: 'hmac', secrets: 'gh-secret', header: 'X-Hub-Signature-256', prefix: 'sha256=', encoding: 'hex', idHeader: 'X-GitHub-Delivery', typeHeader: 'X-GitHub-Event' },
      b64: { scheme: 'hmac', secrets: 'b64-secret', header: 'X-Sig', encoding: 'base64', algorithm: 'sha512', timestampHeader: 'X-Sig-Time' },
    })

    it('Standard Webhooks: webhook-id/timestamp/signature, whsec_ base64 keys, v1 list', async () => {
      h = await createHarness(dialect, { WEBHOOK_TARGETS: targets })
      const { event_id: _drop, ...noId } = makeEvent()
      const body = JSON.stringify(noId)
      const ts = h.clock.now() / 1000
      const good = signStandard('msg_1', ts, body, stdSecret)
      const headers = (sig: string, id = 'msg_1', t = ts) => ({ 'webhook-id': id, 'webhook-timestamp': String(t), 'webhook-signature': sig })
      await expectError(await h.post(body, headers(signStandard('msg_1', ts, body, `whsec_${randomBytes(32).toString('base64')}`)), 'std'), 401, 'authentication_error')
      await expectError(await h.post(body, headers(good, 'msg_2'), 'std'), 401, 'authentication_error') // id is signed
      await expectError(await h.post(body, headers(good, 'msg_1', ts + 1), 'std'), 401, 'authentication_error') // timestamp is signed
      await expectError(await h.post(body, headers(good.replace('v1,', 'v2,')), 'std'), 401, 'authentication_error')
      await expectError(await h.post(body, headers('v1,'), 'std'), 401, 'authentication_error')
      await expectError(await h.post(body, headers(good, 'msg_1', 'soon' as unknown as number), 'std'), 401, 'authentication_error')
      // Two webhook-signature headers reach the receiver joined by Node as "a, b": the valid one first or last.
      expect((await h.post(body, headers(`${good}, v1,AAAA`), 'std')).status).toBe(204)
      expect(await countEvents(h.rt)).toBe(1)
      await h.rt.store.db.deleteFrom('webhook_events').execute()
      const res = await h.post(body, headers(`v1a,bm90LWNoZWNrZWQ= v1,AAAA, ${good}`), 'std')
      expect(res.status).toBe(204)
      const row = await h.rt.store.db.selectFrom('webhook_events').selectAll().executeTakeFirstOrThrow()
      expect([row.event_id, row.target]).toEqual(['msg_1', 'std']) // webhook-id is the id when the body has none
      // The signed webhook-id, not an unsigned X-FormantAI-Event-Id, is the dedupe key: the same delivery re-sent
      // with another unsigned id is the same event.
      const again = await h.post(body, { ...headers(good), 'x-formantai-event-id': 'evt_other' }, 'std')
      expect(again.status).toBe(204)
      expect(again.headers.get('x-switchboard-duplicate')).toBe('true')
      expect(await countEvents(h.rt)).toBe(1)
      const stale = ts - 301
      await expectError(await h.post(body, headers(signStandard('msg_1', stale, body, stdSecret), 'msg_1', stale), 'std'), 401, 'authentication_error')
    })

    it('generic HMAC: configured header, prefix, hex or base64, algorithm and timestamp header', async () => {
      h = await createHarness(dialect, { WEBHOOK_TARGETS: targets })
      const body = JSON.stringify(makeEvent())
      const hex = createHmac('sha256', 'gh-secret').update(body).digest('hex')
      await expectError(await h.post(body, { 'x-hub-signature-256': hex }, 'gh'), 401, 'authentication_error') // prefix missing
      await expectError(await h.post(body, { 'x-hub-signature-256': `sha256=${hex.slice(2)}` }, 'gh'), 401, 'authentication_error')
      expect((await h.post(body, { 'x-hub-signature-256': `sha256=${hex}` }, 'gh')).status).toBe(204)

      const body2 = JSON.stringify(makeEvent())
      const b64 = createHmac('sha512', 'b64-secret').update(body2).digest('base64')
      const now = String(h.clock.now() / 1000)
      await expectError(await h.post(body2, { 'x-sig': b64 }, 'b64'), 401, 'authentication_error') // timestamp header required
      await expectError(await h.post(body2, { 'x-sig': b64.slice(4), 'x-sig-time': now }, 'b64'), 401, 'authentication_error')
      await expectError(await h.post(body2, { 'x-sig': b64, 'x-sig-time': String(h.clock.now() / 1000 - 400) }, 'b64'), 401, 'authentication_error')
      expect((await h.post(body2, { 'x-sig': b64, 'x-sig-time': now }, 'b64')).status).toBe(204)
      expect(await countEvents(h.rt)).toBe(2)

      // A GitHub-shaped delivery: no event_id or event_type in the body, they come in the headers the target names.
      const github = JSON.stringify({ action: 'opened', issue: { number: 1 } })
      const signature = `sha256=${createHmac('sha256', 'gh-secret').update(github).digest('hex')}`
      expect((await h.post(github, { 'x-hub-signature-256': signature, 'x-github-delivery': '72d3162e-cc78-11e3', 'x-github-event': 'issues' }, 'gh')).status).toBe(204)
      const row = await h.rt.store.db.selectFrom('webhook_events').select(['event_id', 'event_type', 'target']).where('target', '=', 'gh').where('event_id', '=', '72d3162e-cc78-11e3').executeTakeFirstOrThrow()
      expect(row).toEqual({ event_id: '72d3162e-cc78-11e3', event_type: 'issues', target: 'gh' })
      // Listed with the target it came from: the type alone does not tell one sender's `created` from another's.
      const listed = await runCli(['events', 'list'], cliEnv(h.rt, { WEBHOOK_TARGETS: targets }))
      expect(listed.out.split('\n')[0]).toMatch(/^event_id\s+target\s+event_type\s/)
      expect(listed.out).toMatch(/72d3162e-cc78-11e3\s+gh\s+issues\s/)
    })

    // The 400 named the provider's headers to every sender: a GitHub delivery without X-GitHub-Event was told about
    // X-FormantAI-Event-Type.
    it('a delivery with no id or type is told where this target reads them', async () => {
      h = await createHarness(dialect, { WEBHOOK_TARGETS: targets })
      const github = JSON.stringify({ action: 'opened' })
      const signature = `sha256=${createHmac('sha256', 'gh-secret').update(github).digest('hex')}`
      const noType = await h.post(github, { 'x-hub-signature-256': signature, 'x-github-delivery': 'd-1' }, 'gh')
      expect(noType.status).toBe(400)
      expect(((await noType.json()) as { error: { message: string } }).error.message).toBe('event type missing: send event_type in the body or a x-github-event header')
      const noId = await h.post(github, { 'x-hub-signature-256': signature, 'x-github-event': 'issues' }, 'gh')
      expect(((await noId.json()) as { error: { message: string } }).error.message).toBe('event id missing: send event_id in the body or a x-github-delivery header')
      const body = JSON.stringify({ data: {} })
      const ts = h.clock.now() / 1000
      const std = await h.post(body, { 'webhook-id': 'msg_t', 'webhook-timestamp': String(ts), 'webhook-signature': signStandard('msg_t', ts, body, stdSecret) }, 'std')
      expect(((await std.json()) as { error: { message: string } }).error.message).toBe('event type missing: send type (or event_type) in the body')
      // The provider's unsigned X-FormantAI-Event-Type is no Standard Webhooks sender's: refused the same, as it says.
      const stdHeader = await h.post(body, { 'webhook-id': 'msg_u', 'webhook-timestamp': String(ts), 'webhook-signature': signStandard('msg_u', ts, body, stdSecret), 'x-formantai-event-type': 'call.x' }, 'std')
      expect([stdHeader.status, ((await stdHeader.json()) as { error: { message: string } }).error.message]).toEqual([400, 'event type missing: send type (or event_type) in the body'])
      const provider = JSON.stringify({ data: {} })
      const sent = await h.post(provider, { 'x-formantai-signature': `sha256=${createHmac('sha256', SECRET).update(provider).digest('hex')}`, 'x-formantai-timestamp': String(ts) })
      expect(((await sent.json()) as { error: { message: string } }).error.message).toBe('event id missing: send event_id in the body or an X-FormantAI-Event-Id header')
    })

    it('a Standard Webhooks body\'s signed type wins over an unsigned X-FormantAI-Event-Type header', async () => {
      h = await createHarness(dialect, { WEBHOOK_TARGETS: targets })
      const body = JSON.stringify({ type: 'contact.updated', data: { id: 1 } })
      const ts = h.clock.now() / 1000
      const headers = { 'webhook-id': 'msg_9', 'webhook-timestamp': String(ts), 'webhook-signature': signStandard('msg_9', ts, body, stdSecret), 'x-formantai-event-type': 'contact.deleted' }
      expect((await h.post(body, headers, 'std')).status).toBe(204)
      expect(await h.rt.store.db.selectFrom('webhook_events').select(['event_id', 'event_type']).executeTakeFirstOrThrow()).toEqual({ event_id: 'msg_9', event_type: 'contact.updated' })
    })

    it('one timestamp rule on every scheme: required while the check is on, not required with WEBHOOK_TOLERANCE_SECONDS=0', async () => {
      h = await createHarness(dialect, { WEBHOOK_TOLERANCE_SECONDS: '0', WEBHOOK_TARGETS: targets })
      const body = JSON.stringify(makeEvent())
      const b64 = createHmac('sha512', 'b64-secret').update(body).digest('base64')
      expect((await h.post(body, { 'x-sig': b64 }, 'b64')).status).toBe(204)
      await h.close()
      h = await createHarness(dialect, { WEBHOOK_ALLOW_UNSIGNED: 'true', WEBHOOK_TARGETS: JSON.stringify({ open: { scheme: 'formant' } }) })
      const unsigned = JSON.stringify(makeEvent())
      expect(await expectError(await h.post(unsigned, {}, 'open'), 401, 'authentication_error')).toMatch(/missing X-FormantAI-Timestamp/)
      expect((await h.post(unsigned, { 'x-formantai-timestamp': String(h.clock.now() / 1000) }, 'open')).status).toBe(204)
    })

    it('an unsigned target is served only with WEBHOOK_ALLOW_UNSIGNED=true', async () => {
      h = await createHarness(dialect, { WEBHOOK_ALLOW_UNSIGNED: 'true', WEBHOOK_TARGETS: JSON.stringify({ open: { scheme: 'formant' } }) })
      expect((await h.post(JSON.stringify(makeEvent()), { 'x-formantai-timestamp': String(h.clock.now() / 1000) }, 'open')).status).toBe(204)
    })
  })

  it('persists webhook health: received, duplicates, rejections by reason per minute', async () => {
    h = await createHarness(dialect)
    const event = makeEvent()
    await h.send(event)
    await h.send(event)
    await h.send(event)
    await h.send(makeEvent())
    await h.send(makeEvent(), { secret: 'whsec_wrong' })
    await h.send(makeEvent(), { secret: 'whsec_wrong' })
    await h.post('{}', { 'x-formantai-timestamp': String(h.clock.now() / 1000) })
    await h.send(makeEvent(), { headers: { 'x-formantai-timestamp': String(h.clock.now() / 1000 - 3600) } })
    await h.send(makeEvent()) // flushes buffered rejection counts with its commit
    const from = h.clock.now() - 60_000
    const health = await webhookHealth(h.rt, from, h.clock.now() + 60_000)
    expect(health).toEqual({ received: 3, duplicates: 2, rejected: { invalid_signature: 2, missing_signature: 1, stale_timestamp: 1 }, dead: 0, reconciled: 0 })
    expect(await webhookHealth(h.rt, from - 3_600_000, from - 60_000)).toEqual({ received: 0, duplicates: 0, rejected: {}, dead: 0, reconciled: 0 })
    const metrics = await h.rt.metrics.metrics()
    expect(metrics).toMatch(/switchboard_webhooks_rejected_total\{target="formant",reason="invalid_signature"\} 2/)
    expect(metrics).toMatch(/switchboard_webhooks_duplicates_total\{target="formant"\} 2/)
    expect(metrics).toMatch(/switchboard_webhooks_accepted_total\{target="formant"\} 3/)
    expect(metrics).toMatch(/switchboard_webhook_ingest_seconds_count\{outcome="accepted"\} 3/)
  })
})
