import { expect, it, vi } from 'vitest'
import { main } from '../../src/cli.ts'
import { purgeOldDeliveries } from '../../src/destinations/index.ts'
import type { ForwardedEvent } from '../../src/config/destinations.ts'
import { signStandard } from '../../src/webhooks/index.ts'
import { replayFailed } from '../../src/destinations/deliveries.ts'
import { deliveryId } from '../../src/destinations/sign.ts'
import { pausedDestinations } from '../../src/destinations/pauses.ts'
import { startDeliveryWorker, SWEEP_MS } from '../../src/destinations/worker.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { cliEnv, runCli } from '../webhooks/helpers.ts'
import { adminHeaders, closedAfterEach, createForwardHarness, DEST_SECRET, destination, makeEvent, OLD_SECRET, ok, reconfigured, sentEventIds, verifyStandard, WAIT, type ForwardHarness } from './helpers.ts'
import { flashMessage } from '../../src/ui/flash.ts'

// Real HTTP on a shared, busy machine.
vi.setConfig({ testTimeout: 60_000 })

describeEachDialect('destinations: delivery', (dialect) => {
  let h: ForwardHarness | undefined
  const sink = closedAfterEach(() => {
    const current = h
    h = undefined
    return current
  })

  it('forwards a processed event signed the Standard Webhooks way; the official library verifies it, with either secret during rotation', async () => {
    const s = await sink()
    h = await createForwardHarness(dialect, [destination(s, { secret: [DEST_SECRET, OLD_SECRET], headers: { 'X-Team': 'ops', 'User-Agent': 'team-agent/2' } })])
    const event = makeEvent()
    await h.ingest([event])
    await vi.waitFor(async () => expect((await h!.status())[0]?.status).toBe('delivered'), WAIT)
    expect(s.requests).toHaveLength(1)
    const [req] = s.requests
    expect(req!.headers['webhook-id']).toBe(deliveryId('crm', event.event_id))
    expect(req!.headers['x-team']).toBe('ops')
    // The destination's User-Agent replaces switchboard's: one header, not both (names are case-insensitive).
    expect(req!.rawHeaders.filter((_v, i) => i % 2 === 0 && req!.rawHeaders[i]!.toLowerCase() === 'user-agent')).toHaveLength(1)
    expect(req!.headers['user-agent']).toBe('team-agent/2')
    expect(req!.headers['x-switchboard-event-type']).toBe(event.event_type)
    expect(String(req!.headers['webhook-signature']).split(' ')).toHaveLength(2)
    expect(verifyStandard(req!, DEST_SECRET)).toEqual(event)
    expect(verifyStandard(req!, OLD_SECRET)).toEqual(event)
    expect(() => verifyStandard(req!, 'whsec_' + Buffer.alloc(24, 7).toString('base64'))).toThrow()
    // Timestamp is the service clock's, in seconds.
    expect(Number(req!.headers['webhook-timestamp'])).toBe(Math.floor(h.clock.now() / 1000))
  })

  it('destinations show writes the payload with nothing in it that steers the terminal (C1 controls escaped, still JSON)', async () => {
    const s = await sink()
    h = await createForwardHarness(dialect, [destination(s)])
    const event = makeEvent({ call: { call_parameters: { customer_phone: '+919876543210', name: 'Asha\u009b2J\u2028' } } })
    await h.ingest([event])
    await vi.waitFor(async () => expect((await h!.status())[0]?.status).toBe('delivered'), WAIT)
    const shown = await runCli(['destinations', 'show', deliveryId('crm', event.event_id)], cliEnv(h.rt, { DESTINATIONS: JSON.stringify([destination(s)]), ALLOW_PRIVATE_DESTINATIONS: '1' }))
    expect(shown.code).toBe(0)
    expect(shown.out).not.toMatch(/[\u007f-\u009f\u2028\u2029]/)
    expect(shown.out).toContain('Asha\\u009b2J\\u2028')
  })

  it('only forwards the types and agents a destination asks for', async () => {
    const s = await sink()
    h = await createForwardHarness(dialect, [destination(s, { events: ['call.completed'], agentIds: [101] })])
    await h.ingest([
      makeEvent({ event_type: 'call.completed' }),
      makeEvent({ event_type: 'call.no_answer' }),
      makeEvent({ event_type: 'call.completed', call: { agent_id: 201 } }),
    ])
    await vi.waitFor(async () => expect((await h!.status()).map((r) => r.status)).toEqual(['delivered']), WAIT)
    expect(s.requests).toHaveLength(1)
  })

  it('a sink failing 3 times then succeeding gets the event exactly once as a 2xx, with the same webhook-id on every attempt', async () => {
    const s = await sink((n, _req, res) => res.writeHead(n < 3 ? 500 : 200).end(n < 3 ? 'boom' : 'ok'))
    h = await createForwardHarness(dialect, [destination(s)])
    const event = makeEvent()
    await h.ingest([event])
    for (let i = 1; i <= 3; i++) {
      await vi.waitFor(async () => {
        const [row] = await h!.status()
        expect(row!.attempts).toBe(i)
        expect(row!.status).toBe('pending')
      }, WAIT)
      // The schedule's wait (1 s, 2 s, 3 s, ±20 %): nothing goes out before it.
      await h.clock.advance(500)
      expect(s.requests).toHaveLength(i)
      await h.clock.advance(i * 1_000 * 1.2)
    }
    await vi.waitFor(async () => expect((await h!.status())[0]?.status).toBe('delivered'), WAIT)
    expect(s.requests).toHaveLength(4)
    expect(new Set(s.requests.map((r) => r.headers['webhook-id']))).toEqual(new Set([deliveryId('crm', event.event_id)]))
    for (const r of s.requests) expect(verifyStandard(r)).toEqual(event)
    const shown = await runCli(['destinations', 'show', deliveryId('crm', event.event_id), '--json'], cliEnv(h.rt, { DESTINATIONS: JSON.stringify([destination(s)]), ALLOW_PRIVATE_DESTINATIONS: '1' }))
    const detail = JSON.parse(shown.out) as { attempt_log: Array<{ status: number; result: string; response: string }> }
    expect(detail.attempt_log.map((a) => [a.status, a.result, a.response])).toEqual([
      [500, 'retry', 'boom'], [500, 'retry', 'boom'], [500, 'retry', 'boom'], [200, 'delivered', 'ok'],
    ])
  })

  it('a sink down for the whole schedule ends dead with every attempt kept; replay delivers it with the same webhook-id', async () => {
    const s = await sink((_n, _req, res) => res.writeHead(503).end('x'.repeat(5000)))
    const dests = [destination(s)]
    h = await createForwardHarness(dialect, dests)
    const event = makeEvent()
    await h.ingest([event])
    for (let i = 1; i <= 3; i++) {
      await vi.waitFor(async () => expect((await h!.status())[0]?.attempts).toBe(i), WAIT)
      // The longest wait (i s + 20 % jitter) and one sweep more: the worker looks for rows fallen due every
      // SWEEP_MS of the clock, so a row due just after the last sweep inside the advance waits for the next one.
      await h.clock.advance(i * 1_000 * 1.2 + SWEEP_MS)
    }
    await vi.waitFor(async () => expect((await h!.status())[0]?.status).toBe('dead'), WAIT)
    const env = cliEnv(h.rt, { DESTINATIONS: JSON.stringify(dests), ALLOW_PRIVATE_DESTINATIONS: '1' })
    const dead = JSON.parse((await runCli(['destinations', 'deliveries', '--status', 'dead', '--json'], env)).out) as Array<{ id: string; attempts: number }>
    expect(dead).toMatchObject([{ id: deliveryId('crm', event.event_id), attempts: 4 }])
    const detail = JSON.parse((await runCli(['destinations', 'show', dead[0]!.id, '--json'], env)).out) as { attempt_log: Array<{ status: number; response: string }> }
    expect(detail.attempt_log).toHaveLength(4)
    expect(detail.attempt_log[0]!.response).toHaveLength(1024)

    s.behave(ok)
    const replay = await runCli(['destinations', 'replay', '--destination', 'crm', '--since', '2026-01-01T00:00:00Z'], env)
    expect(replay.out).toMatch(/^1 failed or dead/)
    // Due at once (stored as 0, whatever the clocks): said as `now`, not as a next attempt on 1970-01-01.
    const due = await runCli(['destinations', 'show', dead[0]!.id], env)
    expect(due.out).toMatch(/^next_attempt_at +now$/m)
    expect((await runCli(['destinations', 'deliveries'], env)).out).not.toContain('1970')
    await h.clock.advance(300)
    await vi.waitFor(async () => expect((await h!.status())[0]?.status).toBe('delivered'), WAIT)
    expect(s.requests).toHaveLength(5)
    expect(s.requests[4]!.headers['webhook-id']).toBe(deliveryId('crm', event.event_id))

    // One delivery by id, from the admin route: sent again (the receiving app dedupes on webhook-id).
    const res = await h.app.fetch(new Request(`http://localhost/admin/destinations/deliveries/${dead[0]!.id}/replay`, { method: 'POST', headers: adminHeaders }))
    expect(res.status).toBe(202)
    await h.clock.advance(300)
    await vi.waitFor(() => expect(s.requests).toHaveLength(6), WAIT)
    expect(s.requests[5]!.headers['webhook-id']).toBe(deliveryId('crm', event.event_id))
    const missing = await h.app.fetch(new Request('http://localhost/admin/destinations/deliveries/msg_nope/replay', { method: 'POST', headers: adminHeaders }))
    expect(missing.status).toBe(404)
    const byRange = await h.app.fetch(new Request('http://localhost/admin/destinations/crm/replay', { method: 'POST', body: '{"since":"2026-01-01T00:00:00Z"}', headers: adminHeaders }))
    expect(await byRange.json()).toEqual({ data: { queued: 0, waits_for_enable: false } })
  })

  it('an event received on a named target reaches a filter as source "target" with the target\'s name, so a destination can keep it out', async () => {
    const s = await sink()
    const secret = `whsec_${Buffer.from('crm-secret-crm-secret-crm-secret').toString('base64')}`
    h = await createForwardHarness(dialect, [destination(s)], { env: { WEBHOOK_TARGETS: JSON.stringify({ crm: { scheme: 'standard', secrets: secret } }) } })
    const seen: Array<Pick<ForwardedEvent, 'id' | 'source' | 'target'>> = []
    // A filter as switchboard.config.ts would give it: provider and recipe events only.
    h.rt.config.destinations.list[0]!.filter = (event) => {
      seen.push({ id: event.id, source: event.source, ...(event.target ? { target: event.target } : {}) })
      return event.source !== 'target'
    }
    const body = JSON.stringify({ type: 'contact.updated', event_type: 'contact.updated', data: { id: 'ct_1' } })
    const ts = Math.floor(h.clock.now() / 1000)
    expect((await h.post(body, { 'webhook-id': 'msg_crm_1', 'webhook-timestamp': String(ts), 'webhook-signature': signStandard('msg_crm_1', ts, body, secret) }, 'crm')).status).toBe(204)
    const provider = makeEvent()
    await h.ingest([provider])
    expect(seen).toEqual([{ id: 'msg_crm_1', source: 'target', target: 'crm' }, { id: provider.event_id, source: 'provider' }])
    await vi.waitFor(() => expect(sentEventIds(s)).toEqual([provider.event_id]), WAIT)
  })

  // As recipes subscribe: `crm:contact.updated` / `crm:*` were accepted and matched nothing (only a bare type did, from
  // every target and the provider alike), and a filter function is for the config file only.
  it('a destination\'s events name a target\'s events as recipes do: crm:contact.updated, crm:*', async () => {
    const s = await sink()
    const secret = `whsec_${Buffer.from('crm-secret-crm-secret-crm-secret').toString('base64')}`
    h = await createForwardHarness(dialect, [destination(s, { name: 'one', events: ['crm:contact.updated'] }), destination(s, { name: 'all', events: ['crm:*'] }), destination(s, { name: 'other', events: ['erp:*'] })], {
      env: { WEBHOOK_TARGETS: JSON.stringify({ crm: { scheme: 'standard', secrets: secret }, erp: { scheme: 'standard', secrets: secret } }) },
    })
    const send = async (target: string, id: string, type: string) => {
      const body = JSON.stringify({ type, data: { id } })
      const ts = Math.floor(h!.clock.now() / 1000)
      expect((await h!.post(body, { 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': signStandard(id, ts, body, secret) }, target)).status).toBe(204)
    }
    await send('crm', 'msg_crm_updated', 'contact.updated')
    await send('crm', 'msg_crm_created', 'contact.created')
    // The provider's events and another target's are not the CRM's.
    await h.ingest([makeEvent()])
    await vi.waitFor(async () => {
      const rows = await h!.rt.store.db.selectFrom('destination_deliveries').select(['destination', 'event_id']).orderBy('destination').orderBy('event_id').execute()
      expect(rows).toEqual([
        { destination: 'all', event_id: 'msg_crm_created' },
        { destination: 'all', event_id: 'msg_crm_updated' },
        { destination: 'one', event_id: 'msg_crm_updated' },
      ])
    }, WAIT)
  })

  it('refuses to replay deliveries of a destination no longer configured (nothing would send them), and an id with a time range', async () => {
    const s = await sink()
    const dests = [destination(s)]
    h = await createForwardHarness(dialect, dests)
    const created = h.clock.now()
    await h.rt.store.db
      .insertInto('destination_deliveries')
      .values(['retired', 'crm'].map((name, i) => ({
        id: `msg_${name}_0`, destination: name, event_id: `evt_${i}`, event_type: 'call.completed', conversation_id: null, payload: '',
        order_at: created * 1000 + i, ordered: 0, status: 'dead', attempts: 4, round_attempts: 4, next_attempt_at: created, claimed_by: null, claimed_until: null,
        last_status: 500, last_error: 'HTTP 500', created_at: created, delivered_at: null,
      })))
      .execute()
    const env = cliEnv(h.rt, { DESTINATIONS: JSON.stringify(dests), ALLOW_PRIVATE_DESTINATIONS: '1' })
    const notConfigured = 'destination "retired" is not in DESTINATIONS (configured: crm): nothing would send its deliveries; add it back to replay them'
    for (const args of [['--destination', 'retired', '--since', '2000-01-01'], ['msg_retired_0']]) {
      const r = await runCli(['destinations', 'replay', ...args], env)
      expect([r.code, r.err.trim()]).toEqual([2, `error: ${notConfigured}`])
    }
    const one = await h.app.fetch(new Request('http://localhost/admin/destinations/deliveries/msg_retired_0/replay', { method: 'POST', headers: adminHeaders }))
    expect([one.status, ((await one.json()) as { error: { message: string } }).error.message]).toEqual([409, notConfigured])
    const range = await h.app.fetch(new Request('http://localhost/admin/destinations/retired/replay', { method: 'POST', headers: adminHeaders }))
    expect(range.status).toBe(409)
    expect((await h.status()).map((r) => [r.destination, r.status])).toEqual(expect.arrayContaining([['retired', 'dead'], ['crm', 'dead']]))
    // Options only the range form takes are a mistake with an id, not ignored.
    const ranged = await runCli(['destinations', 'replay', 'msg_crm_0', '--until', '2000-01-01'], env)
    expect([ranged.code, ranged.err.trim()]).toEqual([2, 'error: --since and --until go with --destination, not with a delivery id'])
    expect((await h.status()).find((r) => r.destination === 'crm')?.status).toBe('dead')
  })

  it('discards every delivery kept for a destination removed from DESTINATIONS (pending ones included), and refuses a configured one', async () => {
    const s = await sink()
    const dests = [destination(s)]
    h = await createForwardHarness(dialect, dests)
    await h.worker.stop()
    const db = h.rt.store.db
    const created = h.clock.now()
    const row = (name: string, i: number, status: string) => ({
      id: `msg_${name}_${i}`, destination: name, event_id: `evt_${i}`, event_type: 'call.completed', conversation_id: null, payload: '',
      order_at: created * 1000 + i, ordered: 0, status, attempts: 1, round_attempts: 1, next_attempt_at: created, claimed_by: null, claimed_until: null,
      last_status: 500, last_error: 'HTTP 500', created_at: created, delivered_at: null,
    })
    // retired (renamed away): two pending nothing will ever send, one dead, one delivered; crm: one pending.
    const rows = [row('retired', 0, 'pending'), row('retired', 1, 'pending'), row('retired', 2, 'dead'), row('retired', 3, 'delivered'), row('crm', 4, 'pending')]
    await db.insertInto('destination_deliveries').values(rows).execute()
    await db.insertInto('destination_attempts').values(rows.map((r) => ({ delivery_id: r.id, attempt: 1, started_at: created, latency_ms: 3, status: 500, result: 'retry', error: 'HTTP 500', response: null }))).execute()
    await db.insertInto('destination_state').values({ name: 'retired', disabled_at: created, disabled_reason: 'HTTP 410 Gone' }).execute()
    // A scrape, a turn of the event loop after the last (a scrape's count is shared by its gauges until then).
    const depth = async () => {
      await new Promise((resolve) => setImmediate(resolve))
      return (await h!.rt.metrics.metrics()).split('\n').filter((l) => l.startsWith('switchboard_destination_queue_depth{'))
    }
    expect(await depth()).toEqual(expect.arrayContaining(['switchboard_destination_queue_depth{destination="retired"} 2']))

    const env = cliEnv(h.rt, { DESTINATIONS: JSON.stringify(dests), ALLOW_PRIVATE_DESTINATIONS: '1' })
    const configured = await runCli(['destinations', 'discard', 'crm'], env)
    expect([configured.code, configured.err.trim()]).toEqual([2, 'error: destination "crm" is in DESTINATIONS: remove it from the configuration (and restart) before discarding its deliveries'])
    const unknown = await runCli(['destinations', 'discard', 'nope'], env)
    expect([unknown.code, unknown.err.trim()]).toEqual([2, 'error: no deliveries kept for a destination named "nope" (see: destinations list)'])
    const refused = await h.app.fetch(new Request('http://localhost/admin/destinations/crm/discard', { method: 'POST', headers: adminHeaders }))
    expect(refused.status).toBe(409)
    expect((await h.app.fetch(new Request('http://localhost/admin/destinations/nope/discard', { method: 'POST', headers: adminHeaders }))).status).toBe(404)

    const done = await runCli(['destinations', 'discard', 'retired', '--json'], env)
    expect([done.code, JSON.parse(done.out)]).toEqual([0, { deliveries: 4, attempts: 4 }])
    expect((await db.selectFrom('destination_deliveries').select('id').execute()).map((r) => r.id)).toEqual(['msg_crm_4'])
    expect((await db.selectFrom('destination_attempts').select('delivery_id').execute()).map((r) => r.delivery_id)).toEqual(['msg_crm_4'])
    expect(await db.selectFrom('destination_state').select('name').where('name', '=', 'retired').execute()).toEqual([])
    // Its gauges go with its rows; the configured one's stay.
    expect(await depth()).toEqual(['switchboard_destination_queue_depth{destination="crm"} 1'])
    const list = await runCli(['destinations', 'list', '--json'], env)
    expect((JSON.parse(list.out) as Array<{ name: string }>).map((d) => d.name)).toEqual(['crm'])
  })

  it('the admin routes refuse a replay range that ends before it starts, and enabling a destination that is not configured', async () => {
    const s = await sink()
    h = await createForwardHarness(dialect, [destination(s)])
    const backwards = await h.app.fetch(new Request('http://localhost/admin/destinations/crm/replay', { method: 'POST', headers: { ...adminHeaders, 'content-type': 'application/json' }, body: JSON.stringify({ since: '2026-03-02T00:00:00Z', until: '2026-03-01T00:00:00Z' }) }))
    expect([backwards.status, ((await backwards.json()) as { error: { message: string } }).error.message]).toEqual([400, '"until" must be after "since"'])
    expect((await h.app.fetch(new Request('http://localhost/admin/destinations/nope/enable', { method: 'POST', headers: adminHeaders }))).status).toBe(404)
    expect((await h.app.fetch(new Request('http://localhost/admin/destinations/crm/enable', { method: 'POST', headers: adminHeaders }))).status).toBe(200)
  })

  it('purges finished deliveries, their attempt logs and unneeded bodies once past the retention window; pending ones stay', async () => {
    const s = await sink((n, _req, res) => res.writeHead(n === 0 ? 500 : 204).end())
    const down = await sink((_n, _req, res) => res.writeHead(503).end())
    const days = 86_400_000
    h = await createForwardHarness(dialect, [destination(s), destination(down, { name: 'warehouse', retryScheduleMs: [7 * days] })])
    await h.ingest([makeEvent()])
    await vi.waitFor(async () => expect((await h!.status()).map((r) => r.attempts)).toEqual([1, 1]), WAIT)
    await h.clock.advance(1_300)
    await vi.waitFor(async () => expect((await h!.status()).find((r) => r.destination === 'crm')?.status).toBe('delivered'), WAIT)
    const attemptLogs = async () => (await h!.rt.store.db.selectFrom('destination_attempts').select('delivery_id').execute()).length
    expect(await attemptLogs()).toBe(3)
    // Within the window (EVENT_RETENTION_DAYS, 30): nothing goes.
    expect(await purgeOldDeliveries(h.rt)).toEqual({ deliveries: 0, attempts: 0, payloads: 0, skipped: false })
    await h.worker.stop()
    await h.clock.advance(31 * days)
    // The event's body stays while its pending delivery needs it…
    expect(await purgeOldDeliveries(h.rt)).toEqual({ deliveries: 1, attempts: 2, payloads: 0, skipped: false })
    expect((await h.status()).map((r) => [r.destination, r.status])).toEqual([['warehouse', 'pending']])
    expect(await attemptLogs()).toBe(1)
    // …and goes with its last delivery.
    await h.rt.store.db.updateTable('destination_deliveries').set({ status: 'dead' }).execute()
    expect(await purgeOldDeliveries(h.rt)).toEqual({ deliveries: 1, attempts: 1, payloads: 1, skipped: false })
    expect(await h.rt.store.db.selectFrom('destination_payloads').select('event_id').execute()).toEqual([])
  })

  it('purges in chunks, every destination with rows (one no longer configured too), a delivery with its attempts', async () => {
    const s = await sink()
    const days = 86_400_000
    h = await createForwardHarness(dialect, [destination(s)])
    await h.worker.stop()
    const db = h.rt.store.db
    const created = h.clock.now()
    const row = (destinationName: string, i: number, status: string) => ({
      id: `msg_${destinationName}_${i}`, destination: destinationName, event_id: `evt_${i}`, event_type: 'call.completed', conversation_id: null, payload: '',
      order_at: created * 1000 + i, ordered: 0, status, attempts: 1, round_attempts: 1, next_attempt_at: created, claimed_by: null, claimed_until: null,
      last_status: 200, last_error: null, created_at: created, delivered_at: status === 'delivered' ? created : null,
    })
    // crm: 5 delivered and a pending one; retired (no longer configured): 3 dead. Each with one attempt logged.
    const rows = [...[0, 1, 2, 3, 4].map((i) => row('crm', i, 'delivered')), row('crm', 5, 'pending'), ...[0, 1, 2].map((i) => row('retired', i, 'dead'))]
    await db.insertInto('destination_deliveries').values(rows).execute()
    await db.insertInto('destination_attempts').values(rows.map((r) => ({ delivery_id: r.id, attempt: 1, started_at: created, latency_ms: 3, status: 200, result: 'delivered', error: null, response: null }))).execute()
    await db.insertInto('destination_payloads').values([0, 1, 2, 3, 4, 5].map((i) => ({ event_id: `evt_${i}`, payload: '{}', created_at: created }))).execute()
    await h.clock.advance(31 * days)
    // Chunks of 2: crm's five in three transactions, retired's three in two; evt_5's body stays with its pending delivery.
    expect(await purgeOldDeliveries(h.rt, { chunk: 2 })).toEqual({ deliveries: 8, attempts: 8, payloads: 5, skipped: false })
    expect((await db.selectFrom('destination_deliveries').select('id').execute()).map((r) => r.id)).toEqual(['msg_crm_5'])
    expect((await db.selectFrom('destination_attempts').select('delivery_id').execute()).map((r) => r.delivery_id)).toEqual(['msg_crm_5'])
    expect((await db.selectFrom('destination_payloads').select('event_id').execute()).map((r) => r.event_id)).toEqual(['evt_5'])
  })

  it('honours Retry-After on 429, and a 410 disables the destination until it is enabled again', async () => {
    const s = await sink((n, _req, res) => (n === 0 ? res.writeHead(429, { 'retry-after': '120' }).end() : n === 1 ? res.writeHead(410).end() : res.writeHead(200).end()))
    const dests = [destination(s)]
    h = await createForwardHarness(dialect, dests)
    await h.ingest([makeEvent()])
    await vi.waitFor(async () => expect((await h!.status())[0]?.attempts).toBe(1), WAIT)
    expect((await h.status())[0]!.next_attempt_at).toBe(h.clock.now() + 120_000)
    await h.clock.advance(119_000)
    expect(s.requests).toHaveLength(1)
    await h.clock.advance(1_500)
    await vi.waitFor(async () => expect((await h!.status())[0]?.attempts).toBe(2), WAIT)
    await h.ingest([makeEvent()])
    await h.clock.advance(10_000)
    expect(s.requests).toHaveLength(2)
    const env = cliEnv(h.rt, { DESTINATIONS: JSON.stringify(dests), ALLOW_PRIVATE_DESTINATIONS: '1' })
    const listed = JSON.parse((await runCli(['destinations', 'list', '--json'], env)).out) as Array<{ state: string; pending: number }>
    expect(listed).toMatchObject([{ name: 'crm', state: 'disabled', pending: 2 }])
    // A replay says it waits for the destination to be enabled: "the running service sends it" was followed by nothing.
    const first = (await h.status())[0]!.id
    expect((await runCli(['destinations', 'replay', first], env)).out).toBe(`${first}: queued, but "crm" is disabled (it answered 410 Gone): it goes out, with the same webhook-id, once you run destinations enable crm\n`)
    expect(JSON.parse((await runCli(['destinations', 'replay', first, '--json'], env)).out)).toEqual({ queued: 1, ids: [first], waits_for_enable: true })
    expect(flashMessage(new URLSearchParams('done=delivery-queued&n=1&w=1'))).toBe('Queued 1 delivery to be sent again, but the destination is disabled (it answered 410 Gone): it goes out once it is enabled.')
    const enabled = await runCli(['destinations', 'enable', 'crm'], env)
    expect(enabled.err).toBe('')
    expect(enabled.out).toBe('crm: enabled\n')
    await h.clock.advance(6_000)
    await vi.waitFor(async () => expect((await h!.status()).map((r) => r.status)).toEqual(['delivered', 'delivered']), WAIT)
  })

  it.each([
    ['ahead of', 10 * 60_000],
    ['behind', -10 * 60_000],
  ])('reads a Retry-After date on the destination\'s clock, 10 minutes %s this one, by the answer\'s Date', async (_way, skewMs) => {
    // Five minutes from the destination's now, on its clock: read on this one, ten minutes more (ahead) or a date
    // already past, i.e. the scheduled minute (behind).
    const s = await sink((_n, _req, res) => {
      const sinkNow = h!.clock.now() + skewMs
      res.writeHead(503, { 'retry-after': new Date(sinkNow + 5 * 60_000).toUTCString(), date: new Date(sinkNow).toUTCString() }).end()
    })
    h = await createForwardHarness(dialect, [destination(s, { retryScheduleMs: [60_000, 60_000] })])
    await h.ingest([makeEvent()])
    await vi.waitFor(async () => expect((await h!.status())[0]?.attempts).toBe(1), WAIT)
    expect((await h.status())[0]!.next_attempt_at - h.clock.now()).toBe(5 * 60_000)
  })

  it('a 503 with Retry-After: 0 (or a value that is not one) waits the schedule all the same', async () => {
    const zero = await sink((_n, _req, res) => res.writeHead(503, { 'retry-after': '0' }).end())
    // V8's Date.parse reads "1.5" as a date in 2001: a wait of 0 if it were believed.
    const junk = await sink((_n, _req, res) => res.writeHead(503, { 'retry-after': '1.5' }).end())
    const schedule = { retryScheduleMs: [60_000, 60_000, 60_000] }
    h = await createForwardHarness(dialect, [destination(zero, { name: 'zero', ...schedule }), destination(junk, { name: 'junk', ...schedule })])
    await h.ingest([makeEvent()])
    await vi.waitFor(async () => expect((await h!.status()).map((r) => r.attempts)).toEqual([1, 1]), WAIT)
    // The scheduled minute, jittered ±20 %.
    for (const row of await h.status()) expect(row.next_attempt_at - h.clock.now(), row.destination).toBeGreaterThanOrEqual(48_000)
    await h.clock.advance(30_000)
    expect([zero.requests.length, junk.requests.length]).toEqual([1, 1])
  })

  it('keeps per-conversation order under retries; a failing conversation holds only itself', async () => {
    const failFirstOf = new Set(['evt_a1'])
    const s = await sink((_n, _req, res, body) => {
      const id = (JSON.parse(body) as { event_id: string }).event_id
      if (failFirstOf.delete(id)) return void res.writeHead(500).end()
      res.writeHead(200).end()
    })
    h = await createForwardHarness(dialect, [destination(s, { ordered: true })])
    const a = (i: number) => makeEvent({ event_id: `evt_a${i}`, call: { conversation_id: 'conv-a_1' } })
    const b = (i: number) => makeEvent({ event_id: `evt_b${i}`, call: { conversation_id: 'conv-b_1' } })
    await h.ingest([a(1), b(1), a(2), b(2), a(3), b(3)])
    // Conversation b goes through while a waits for its first event's retry.
    await vi.waitFor(() => expect(s.requests.map((r) => JSON.parse(r.body).event_id).filter((id: string) => id.startsWith('evt_b'))).toEqual(['evt_b1', 'evt_b2', 'evt_b3']), WAIT)
    expect(s.requests.map((r) => JSON.parse(r.body).event_id).filter((id: string) => id.startsWith('evt_a'))).toEqual(['evt_a1'])
    await h.clock.advance(1_300)
    await vi.waitFor(async () => expect((await h!.status()).every((r) => r.status === 'delivered')).toBe(true), WAIT)
    expect(s.requests.map((r) => JSON.parse(r.body).event_id).filter((id: string) => id.startsWith('evt_a'))).toEqual(['evt_a1', 'evt_a1', 'evt_a2', 'evt_a3'])
  })

  it('a destination switched to ordered keeps the order of the deliveries queued before the switch', async () => {
    const failFirstOf = new Set(['evt_a1'])
    const s = await sink((_n, _req, res, body) => {
      const id = (JSON.parse(body) as { event_id: string }).event_id
      if (failFirstOf.delete(id)) return void res.writeHead(500).end()
      res.writeHead(200).end()
    })
    h = await createForwardHarness(dialect, [destination(s)])
    // Queued while the destination does not order (its worker stopped, so they wait)…
    await h.worker.stop()
    await h.ingest([1, 2, 3].map((i) => makeEvent({ event_id: `evt_a${i}`, call: { conversation_id: 'conv-a_1' } })))
    // …then the service restarts with `ordered: true`.
    h.worker = startDeliveryWorker(reconfigured(h.rt, (d) => ({ ...d, ordered: true })))
    // The first one's retry comes before the two behind it, although they were queued unordered.
    await expectFirstRetriedThenInOrder(h, () => sentEventIds(s))
  })

  it('a replay follows the ordering in force: dead deliveries queued unordered come back in their conversation\'s order', async () => {
    let failing = true
    const failReplayOf = new Set(['evt_a1'])
    const s = await sink((_n, _req, res, body) => {
      const id = (JSON.parse(body) as { event_id: string }).event_id
      if (failing || failReplayOf.delete(id)) return void res.writeHead(500).end()
      res.writeHead(200).end()
    })
    // Unordered, no retries: each first failure is dead.
    h = await createForwardHarness(dialect, [destination(s, { retryScheduleMs: [] })])
    await h.ingest([1, 2, 3].map((i) => makeEvent({ event_id: `evt_a${i}`, call: { conversation_id: 'conv-a_1' } })))
    await vi.waitFor(async () => expect((await h!.status()).map((r) => r.status)).toEqual(['dead', 'dead', 'dead']), WAIT)
    // Restarted with `ordered: true` (and a retry); nothing is pending, so the start has nothing to put in order.
    await h.worker.stop()
    const ordered = reconfigured(h.rt, (d) => ({ ...d, ordered: true, retryScheduleMs: [1_000] }))
    h.worker = startDeliveryWorker(ordered)
    await h.worker.idle()
    failing = false
    expect(await replayFailed(ordered, 'crm', 0, Number.MAX_SAFE_INTEGER)).toBe(3)
    // The worker finds them at its next sweep.
    await h.clock.advance(SWEEP_MS)
    await expectFirstRetriedThenInOrder(h, () => sentEventIds(s, 3))
  })

  it('a paused (failing, hanging) destination does not slow a healthy one', async () => {
    const hanging = await sink(() => {}) // never answers
    const healthy = await sink()
    h = await createForwardHarness(dialect, [destination(hanging, { name: 'slow', concurrency: 2 }), destination(healthy, { name: 'fast' })], {
      worker: { breaker: { threshold: 2, basePauseMs: 60_000 } },
    })
    const events = Array.from({ length: 40 }, () => makeEvent())
    await h.ingest(events)
    await vi.waitFor(() => expect(healthy.requests).toHaveLength(40), WAIT)
    expect(hanging.requests).toHaveLength(2)
    // The hanging requests time out on the service clock; the breaker then pauses "slow".
    await h.clock.advance(2_000)
    await vi.waitFor(async () => expect(h!.worker.paused()).toEqual(['slow']), WAIT)
    await h.clock.advance(2_000)
    const sentBeforePause = hanging.requests.length
    expect(sentBeforePause).toBeLessThanOrEqual(3)
    await h.ingest(Array.from({ length: 10 }, () => makeEvent()))
    await vi.waitFor(() => expect(healthy.requests).toHaveLength(50), WAIT)
    await h.clock.advance(3_000)
    expect(hanging.requests).toHaveLength(sentBeforePause)
    // Received is not yet recorded: wait for the outcomes' commit before reading the metrics.
    await vi.waitFor(async () => expect((await h!.status()).filter((r) => r.destination === 'fast' && r.status === 'delivered')).toHaveLength(50), WAIT)
    const metrics = await h.rt.metrics.metrics()
    expect(metrics).toMatch(/switchboard_destination_paused\{destination="slow"\} 1/)
    expect(metrics).toMatch(/switchboard_destination_deliveries_total\{destination="fast",result="delivered"\} 50/)
    expect(metrics.split('\n').filter((l) => l.startsWith('switchboard_destination_queue_depth{'))).toEqual([
      'switchboard_destination_queue_depth{destination="slow"} 50', 'switchboard_destination_queue_depth{destination="fast"} 0',
    ])
    expect(metrics).toMatch(/switchboard_destination_oldest_undelivered_seconds\{destination="slow"\} [1-9]/)
    expect(metrics).toMatch(/switchboard_destination_attempt_seconds_count\{destination="fast"\} 50/)
    // The list, the API and the dashboard say so too (they run apart from the worker's breaker): paused, until when, why.
    const listed = async () => ((await (await h!.app.fetch(new Request('http://localhost/admin/destinations', { headers: adminHeaders }))).json()) as { data: Array<{ name: string; state: string; paused_until: string | null; paused_reason: string | null }> }).data
    await vi.waitFor(async () => expect((await listed()).find((d) => d.name === 'slow')?.state).toBe('paused'), WAIT)
    const slow = (await listed()).find((d) => d.name === 'slow')!
    expect(Date.parse(slow.paused_until!)).toBeGreaterThan(h.clock.now())
    expect(Date.parse(slow.paused_until!)).toBeLessThanOrEqual(h.clock.now() + 60_000)
    expect(slow.paused_reason).toMatch(/^2 failed attempts in a row; the last: .*timed out/)
    expect((await listed()).find((d) => d.name === 'fast')).toMatchObject({ state: 'active', paused_until: null, paused_reason: null })
    // The pause ends: one probe goes out; it succeeds and the backlog drains.
    hanging.behave(ok)
    await h.clock.advance(60_000)
    await vi.waitFor(async () => expect((await h!.status()).filter((r) => r.status !== 'delivered')).toEqual([]), { timeout: 10_000 })
    await vi.waitFor(async () => expect((await listed()).find((d) => d.name === 'slow')).toMatchObject({ state: 'active', paused_until: null, paused_reason: null }), WAIT)
  })

  it('destinations enable ends a breaker pause now: the next delivery goes out as the probe, not when the pause runs out', async () => {
    const s = await sink((_n, _req, res) => res.writeHead(500).end('down'))
    const dests = [destination(s, { name: 'crm', retryScheduleMs: [1_000, 1_000, 1_000] })]
    h = await createForwardHarness(dialect, dests, { worker: { breaker: { threshold: 2, basePauseMs: 600_000 } } })
    await h.ingest([makeEvent(), makeEvent()])
    await vi.waitFor(() => expect(h!.worker.paused()).toEqual(['crm']), WAIT)
    const env = cliEnv(h.rt, { DESTINATIONS: JSON.stringify(dests), ALLOW_PRIVATE_DESTINATIONS: '1' })
    // The CLI on the service's clock (the pause's end is judged by it).
    const cli = async (...argv: string[]) => {
      let out = ''
      const code = await main(argv, { env, overrides: { clock: h!.clock }, stdout: (t) => void (out += t), stderr: () => {} })
      return { code, out }
    }
    // Listed paused, with why (the table too, not only --json).
    await vi.waitFor(async () => expect((await cli('destinations', 'list')).out).toMatch(/crm .*paused .*2 failed attempts in a row; the last: HTTP 500/), WAIT)
    const sent = s.requests.length
    s.behave(ok)
    // A minute on: a pause of 10 minutes holds everything back.
    await h.clock.advance(60_000)
    expect(s.requests).toHaveLength(sent)
    const resumed = await cli('destinations', 'enable', 'crm')
    expect(resumed.out).toBe('crm: pause ended: the running service sends its next delivery as a probe within 5 s (failing, it is paused again)\n')
    // Seen at the worker's next look at the destinations' state; the probe gets through and the backlog drains.
    await h.clock.advance(6_000)
    await vi.waitFor(async () => expect((await h!.status()).map((r) => r.status)).toEqual(['delivered', 'delivered']), WAIT)
    expect(h.worker.paused()).toEqual([])
    expect((await cli('destinations', 'enable', 'crm')).out).toBe('crm: was neither disabled nor paused\n')
  })

  // The worker sent "the next delivery" as the probe — due at its retry, an hour on here (hours on the default
  // schedule) — while the destination read `active` and sent nothing.
  it('ending a pause by hand sends the probe at once, though the next retry is an hour away', async () => {
    const s = await sink((_n, _req, res) => res.writeHead(500).end('down'))
    const dests = [destination(s, { name: 'crm', retryScheduleMs: [3_600_000, 3_600_000] })]
    h = await createForwardHarness(dialect, dests, { worker: { breaker: { threshold: 2, basePauseMs: 600_000 } } })
    await h.ingest([makeEvent(), makeEvent()])
    await vi.waitFor(() => expect(h!.worker.paused()).toEqual(['crm']), WAIT)
    // Both failures recorded: their retries an hour on.
    const retriesAt = async () => (await h!.rt.store.db.selectFrom('destination_deliveries').select(['attempts', 'next_attempt_at']).execute()).map((r) => [Number(r.attempts), Number(r.next_attempt_at) - h!.clock.now() > 30 * 60_000])
    await vi.waitFor(async () => {
      await h!.clock.advance(100)
      expect(await retriesAt()).toEqual([[1, true], [1, true]])
    }, WAIT)
    const env = cliEnv(h.rt, { DESTINATIONS: JSON.stringify(dests), ALLOW_PRIVATE_DESTINATIONS: '1' })
    let out = ''
    await main(['destinations', 'enable', 'crm'], { env, overrides: { clock: h.clock }, stdout: (t) => void (out += t), stderr: () => {} })
    expect(out).toBe('crm: pause ended: the running service sends its next delivery as a probe within 5 s (failing, it is paused again)\n')
    s.behave(ok)
    await h.clock.advance(6_000)
    await vi.waitFor(async () => expect((await h!.status()).map((r) => r.status).filter((st) => st === 'delivered')).toHaveLength(1), WAIT)
    expect(h.worker.paused()).toEqual([])
  })

  // Ordered: the delivery made due was the one with the earliest next attempt — a conversation's later event, due all
  // along but held behind its failed first — so nothing changed, and nothing went out until the first's retry, an hour on.
  it('ending a pause of an ordered destination by hand sends a conversation\'s first pending delivery at once as the probe', async () => {
    let up = false
    const s = await sink((n, req, res, body) => (up ? ok(n, req, res, body) : res.writeHead(500).end('down')))
    const dests = [destination(s, { name: 'crm', ordered: true, retryScheduleMs: [3_600_000, 3_600_000] })]
    h = await createForwardHarness(dialect, dests, { worker: { breaker: { threshold: 2, basePauseMs: 600_000 } } })
    const a = (i: number) => makeEvent({ event_id: `evt_a${i}`, call: { conversation_id: 'conv-a_1' } })
    const b = (i: number) => makeEvent({ event_id: `evt_b${i}`, call: { conversation_id: 'conv-b_1' } })
    await h.ingest([a(1), b(1), a(2), b(2)])
    await vi.waitFor(() => expect(h!.worker.paused()).toEqual(['crm']), WAIT)
    const attempted = async () => (await h!.rt.store.db.selectFrom('destination_deliveries').select('attempts').execute()).map((r) => Number(r.attempts)).sort()
    await vi.waitFor(async () => {
      await h!.clock.advance(100)
      expect(await attempted()).toEqual([0, 0, 1, 1])
    }, WAIT)
    const env = cliEnv(h.rt, { DESTINATIONS: JSON.stringify(dests), ALLOW_PRIVATE_DESTINATIONS: '1' })
    await main(['destinations', 'enable', 'crm'], { env, overrides: { clock: h.clock }, stdout: () => {}, stderr: () => {} })
    up = true
    await h.clock.advance(6_000)
    await vi.waitFor(async () => expect((await h!.status()).filter((r) => r.status === 'delivered')).not.toHaveLength(0), WAIT)
    expect(h.worker.paused()).toEqual([])
    const sentIds = () => s.requests.map((r) => (JSON.parse(r.body) as { event_id: string }).event_id)
    // The probe was a conversation's first event; through, the breaker closes and the other waits for its retry.
    expect(sentIds().slice(2)[0]).toMatch(/^evt_[ab]1$/)
  })

  // Held deliveries read `now` (due) while nothing went out: a paused destination's until its pause ends, a disabled
  // one's until it is enabled.
  it('a paused or disabled destination\'s pending deliveries show what they wait for, not `now`', async () => {
    let answer = 500
    const s = await sink((_n, _req, res) => res.writeHead(answer).end())
    const dests = [destination(s, { retryScheduleMs: [10, 10, 10] })]
    h = await createForwardHarness(dialect, dests, { worker: { breaker: { threshold: 2, basePauseMs: 600_000 } } })
    await h.ingest([makeEvent(), makeEvent()])
    await vi.waitFor(() => expect(h!.worker.paused()).toEqual(['crm']), WAIT)
    await vi.waitFor(async () => expect((await h!.status()).map((r) => r.attempts)).toEqual([1, 1]), WAIT)
    await h.clock.advance(1_000)
    const env = cliEnv(h.rt, { DESTINATIONS: JSON.stringify(dests), ALLOW_PRIVATE_DESTINATIONS: '1' })
    // On the service's clock: the pause is judged by it.
    const run = async (...argv: string[]) => {
      let out = ''
      await main(argv, { env, overrides: { clock: h!.clock }, stdout: (t) => void (out += t), stderr: () => {} })
      return { out }
    }
    const until = [...(await pausedDestinations(h.rt)).values()][0]!.until
    const listed = await run('destinations', 'deliveries')
    expect(listed.out.match(/after its pause, \S+/g)).toEqual([`after its pause, ${new Date(until).toISOString()}`, `after its pause, ${new Date(until).toISOString()}`])
    expect(listed.out).not.toMatch(/\bnow\b/)
    const [first] = await h.status()
    expect((await run('destinations', 'show', first!.id)).out).toMatch(/^next_attempt_at {2}after its pause, /m)
    // Disabled (a 410): until enabled.
    await run('destinations', 'enable', 'crm')
    answer = 410
    await h.clock.advance(6_000)
    await vi.waitFor(async () => {
      await h!.clock.advance(100)
      expect((await run('destinations', 'list', '--json')).out).toMatch(/"state": ?"disabled"/)
    }, WAIT)
    expect((await run('destinations', 'deliveries')).out).toContain('when the destination is enabled')
  })

  // A stop cut every request in flight at once and gave its claim back: the next process sent it again, though the
  // destination had it — at every deploy, up to `concurrency` duplicates a destination.
  it('a stop waits for the deliveries in flight to be answered: each is recorded delivered, none is sent again', async () => {
    const held: Array<() => void> = []
    const s = await sink((_n, _req, res) => void held.push(() => res.writeHead(204).end()))
    h = await createForwardHarness(dialect, [destination(s, { concurrency: 3 })])
    await h.ingest([makeEvent(), makeEvent(), makeEvent()])
    await vi.waitFor(() => expect(held).toHaveLength(3), WAIT)
    const stopping = h.worker.stop()
    // Answered while the stop waits.
    await new Promise((resolve) => setTimeout(resolve, 50))
    for (const answer of held) answer()
    await stopping
    expect((await h.status()).map((r) => r.status)).toEqual(['delivered', 'delivered', 'delivered'])
    h.worker = startDeliveryWorker(h.rt)
    await h.clock.advance(SWEEP_MS)
    await h.worker.idle()
    expect(s.requests).toHaveLength(3)
  })

  it('a stop cuts what is still out after its wait (the claim given back, sent again by the next worker)', async () => {
    let answering = false
    const s = await sink((_n, _req, res) => void (answering && res.writeHead(204).end()))
    h = await createForwardHarness(dialect, [destination(s)], { worker: { stopDrainMs: 100 } })
    await h.ingest([makeEvent()])
    await vi.waitFor(() => expect(s.requests).toHaveLength(1), WAIT)
    await h.worker.stop()
    expect((await h.status()).map((r) => [r.status, r.attempts])).toEqual([['pending', 0]])
    answering = true
    h.worker = startDeliveryWorker(h.rt)
    await vi.waitFor(async () => {
      await h!.clock.advance(SWEEP_MS)
      expect((await h!.status()).map((r) => r.status)).toEqual(['delivered'])
    }, WAIT)
    expect(s.requests).toHaveLength(2)
  })

  // The stopped process's pause record kept the destination `paused` (the dashboard offering Resume) while the next
  // process, its breaker closed, delivered — until the pause's end, up to 10 minutes on.
  it("a stop ends this replica's pause on the pages: the next process starts with its breaker closed", async () => {
    const s = await sink((_n, _req, res) => res.writeHead(500).end('down'))
    h = await createForwardHarness(dialect, [destination(s)], { worker: { breaker: { threshold: 2, basePauseMs: 600_000 } } })
    await h.ingest([makeEvent(), makeEvent()])
    await vi.waitFor(async () => expect([...(await pausedDestinations(h!.rt)).keys()]).toEqual(['crm']), WAIT)
    await h.worker.stop()
    expect([...(await pausedDestinations(h.rt)).keys()]).toEqual([])
  })

  it('a claimed delivery that waited in the buffer until its claim ran low is claimed afresh before it is sent', async () => {
    const held: Array<{ end(): void }> = []
    const s = await sink((_n, _req, res) => void held.push({ end: () => res.writeHead(204).end() }))
    h = await createForwardHarness(dialect, [destination(s, { concurrency: 1, timeoutMs: 20_000 })])
    await h.ingest([makeEvent(), makeEvent(), makeEvent()])
    await vi.waitFor(() => expect(s.requests).toHaveLength(1), WAIT)
    const claims = async () => await h!.rt.store.db.selectFrom('destination_deliveries').select(['claimed_until']).orderBy('order_at').execute()
    // One in flight, two claimed ahead into the buffer: one claim of 35 s (the timeout and 15 s of grace).
    expect(new Set((await claims()).map((r) => r.claimed_until))).toEqual(new Set([h.clock.now() + 35_000]))
    // 10.5 s on, less than the timeout and the start margin (5 s) is left of that claim: when the first answers,
    // the next row is given back and claimed again before it goes out.
    await h.clock.advance(10_500)
    expect(s.requests).toHaveLength(1)
    held[0]!.end()
    await vi.waitFor(() => expect(s.requests).toHaveLength(2), WAIT)
    const [, second, third] = await claims()
    expect(second!.claimed_until).toBe(h.clock.now() + 35_000)
    expect(third!.claimed_until).toBe(h.clock.now() + 35_000)
  })

  it('publishes events a recipe sends (ctx.destinations.publish)', async () => {
    const s = await sink()
    h = await createForwardHarness(dialect, [destination(s, { events: ['followup.*'] })])
    const { publishEvent } = await import('../../src/destinations/publish.ts')
    const first = await publishEvent(h.rt, 'no-answer-followup', 'followup.scheduled', { phone: '+919876543210' }, { idempotencyKey: 'k1' })
    const again = await publishEvent(h.rt, 'no-answer-followup', 'followup.scheduled', { phone: '+919876543210' }, { idempotencyKey: 'k1' })
    expect(again.eventId).toBe(first.eventId)
    expect(first.destinations).toEqual(['crm'])
    expect((await publishEvent(h.rt, 'r', 'report.sent', {})).destinations).toEqual([])
    h.worker.wake()
    await vi.waitFor(() => expect(s.requests).toHaveLength(1), WAIT)
    expect(verifyStandard(s.requests[0]!)).toMatchObject({ event_id: first.eventId, event_type: 'followup.scheduled', data: { phone: '+919876543210' } })
  })
})

/**
 * evt_a1..3 of one conversation, to an ordered destination whose sink fails evt_a1 once (a retry after ~1 s): the two
 * behind it wait for it, then all three arrive in order.
 */
async function expectFirstRetriedThenInOrder(h: ForwardHarness, sent: () => string[]): Promise<void> {
  await vi.waitFor(() => expect(sent()).toEqual(['evt_a1']), WAIT)
  await h.clock.advance(SWEEP_MS)
  expect(sent()).toEqual(['evt_a1'])
  await h.clock.advance(1_300)
  await vi.waitFor(async () => expect((await h.status()).every((r) => r.status === 'delivered')).toBe(true), WAIT)
  expect(sent()).toEqual(['evt_a1', 'evt_a1', 'evt_a2', 'evt_a3'])
}
