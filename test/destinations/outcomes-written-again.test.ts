import { sql } from 'kysely'
import { expect, it, vi } from 'vitest'
import { renewClaims } from '../../src/destinations/outbox.ts'
import { deliveryId } from '../../src/destinations/sign.ts'
import { startDeliveryWorker } from '../../src/destinations/worker.ts'
import type { DestinationInput } from '../../src/config/destinations.ts'
import type { Dialect } from '../../src/db/connect.ts'
import type { Runtime } from '../../src/runtime.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { createTestRuntime } from '../helpers/runtime.ts'
import { closedAfterEach, createForwardHarness, destination, makeEvent, together, WAIT, type ForwardHarness } from './helpers.ts'

// Real HTTP on a shared, busy machine.
vi.setConfig({ testTimeout: 60_000 })

/**
 * Makes the database drop the connection that writes a delivery's `delivered` outcome, while `cut` is on. On Postgres
 * the statement's own backend is ended as `pg_terminate_backend` ends it (what the operator's probe did): the client
 * gets 57P01, its connection is gone. On SQLite the write fails as SQLite answers when it cannot open the database's
 * files (SQLITE_CANTOPEN): both are the database unreachable for a moment, not a statement it refuses.
 */
async function cutOutcomeWrites(rt: Runtime, dialect: Dialect): Promise<{ on(): Promise<void>; off(): Promise<void> }> {
  if (dialect === 'sqlite') {
    let cut = false
    const sqlite = rt.store.sqlite!
    sqlite.function('test_cut', () => {
      if (cut) throw Object.assign(new Error('unable to open database file'), { code: 'SQLITE_CANTOPEN' })
      return 0
    })
    sqlite.exec(`create temp trigger test_cut before update of status on destination_deliveries
      when new.status = 'delivered' begin select test_cut(); end`)
    return { on: async () => void (cut = true), off: async () => void (cut = false) }
  }
  await sql`create table test_cut (on_ boolean)`.execute(rt.store.db)
  await sql`create function test_cut() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from test_cut) then perform pg_terminate_backend(pg_backend_pid()); end if;
      return new;
    end $$`.execute(rt.store.db)
  await sql`create trigger test_cut before update on destination_deliveries for each row when (new.status = 'delivered') execute function test_cut()`.execute(rt.store.db)
  return {
    on: async () => void (await sql`insert into test_cut values (true)`.execute(rt.store.db)),
    off: async () => void (await sql`delete from test_cut`.execute(rt.store.db)),
  }
}

/**
 * Makes the database refuse the attempt row of any attempt answered `refuse me` (a row-level error, as in
 * unstorable-answers.test.ts), and drop the connection that writes a `delivered` outcome, as `cutOutcomeWrites` does,
 * from the first refusal until `lift`: a commit refused for that row is written row by row, and those writes meet the
 * cut. The refusal leaves its mark where its transaction's rollback does not undo it (a flag in this process on SQLite,
 * a sequence on Postgres).
 */
async function cutOnceRefused(rt: Runtime, dialect: Dialect): Promise<{ lift(): Promise<void> }> {
  if (dialect === 'sqlite') {
    let refused = false
    let lifted = false
    const sqlite = rt.store.sqlite!
    sqlite.function('test_refused', () => {
      refused = true
      return 0
    })
    sqlite.function('test_cut', () => {
      if (refused && !lifted) throw Object.assign(new Error('unable to open database file'), { code: 'SQLITE_CANTOPEN' })
      return 0
    })
    sqlite.exec(`create temp trigger test_refuse before insert on destination_attempts
      when new.response = 'refuse me' begin select test_refused(); select raise(abort, 'refused by the test'); end;
      create temp trigger test_cut before update of status on destination_deliveries
      when new.status = 'delivered' begin select test_cut(); end`)
    return { lift: async () => void (lifted = true) }
  }
  await sql`create sequence test_refusals`.execute(rt.store.db)
  await sql`create table test_cut_lifted (lifted boolean)`.execute(rt.store.db)
  await sql`create function test_refuse() returns trigger language plpgsql as $$
    begin
      if new.response = 'refuse me' then
        perform nextval('test_refusals');
        raise exception 'refused by the test' using errcode = 'check_violation';
      end if;
      return new;
    end $$`.execute(rt.store.db)
  await sql`create trigger test_refuse before insert on destination_attempts for each row execute function test_refuse()`.execute(rt.store.db)
  await sql`create function test_cut() returns trigger language plpgsql as $$
    begin
      if (select is_called from test_refusals) and not exists (select 1 from test_cut_lifted) then
        perform pg_terminate_backend(pg_backend_pid());
      end if;
      return new;
    end $$`.execute(rt.store.db)
  await sql`create trigger test_cut before update on destination_deliveries for each row when (new.status = 'delivered') execute function test_cut()`.execute(rt.store.db)
  return { lift: async () => void (await sql`insert into test_cut_lifted values (true)`.execute(rt.store.db)) }
}

describeEachDialect('destinations: an outcome the database could not take for a moment', (dialect) => {
  let h: ForwardHarness | undefined
  const sink = closedAfterEach(() => {
    const current = h
    h = undefined
    return current
  })

  /** A harness whose worker logs to lines the test reads. */
  async function loggedHarness(destinations: DestinationInput[]) {
    h = await createForwardHarness(dialect, destinations)
    const logs = captureLogs('info')
    await h.worker.stop()
    h.worker = startDeliveryWorker({ ...h.rt, log: logs.log })
    return { h, logs }
  }

  /** A logged harness with one destination, and the switch that cuts its outcome writes. */
  async function setUp() {
    const s = await sink()
    const { h, logs } = await loggedHarness([destination(s)])
    const cut = await cutOutcomeWrites(h.rt, dialect)
    return { s, h, cut, logs }
  }

  it('a delivery the sink took while its outcome could not be written is recorded delivered once the database is back, and not sent again', async () => {
    const { s, h, cut, logs } = await setUp()
    await cut.on()
    const event = makeEvent()
    await h.ingest([event])
    h.worker.wake()
    await vi.waitFor(() => expect(s.requests).toHaveLength(1), WAIT)
    // The sink answered 204; writing that down has failed.
    await vi.waitFor(() => expect(logs.find(/could not record delivery outcomes/).length).toBeGreaterThan(0), WAIT)
    await cut.off()
    // Within a few seconds (the outcome is written again every second), well inside the claim (timeoutMs + 15 s).
    await vi.waitFor(async () => {
      await h.clock.advance(1_000)
      expect((await h.status())[0]!.status).toBe('delivered')
    }, WAIT)
    expect(await h.status()).toMatchObject([{ id: deliveryId('crm', event.event_id), status: 'delivered', attempts: 1 }])
    // Past the claim's lapse: nothing goes out a second time.
    await h.clock.advance(30_000)
    await h.worker.idle()
    expect(s.requests).toHaveLength(1)
    expect(logs.find(/^could not record delivery outcomes$/)).toEqual([])
    // The connection drop was told once, as what it was, and so was its end.
    const told = logs.find(/^could not record delivery outcomes; trying again while their claims hold$/)
    expect(told).toMatchObject([{ deliveries: 1 }])
    expect(told[0]!.err).toMatch(dialect === 'sqlite' ? /unable to open database file/ : /terminating connection due to administrator command|Connection terminated/)
    expect(logs.find(/^recorded the delivery outcomes once the database took them$/)).toHaveLength(1)
  })

  it('a stop while an outcome is being written again does not wait out its tries: it is given up, its claim left to lapse', async () => {
    const { s, h, cut, logs } = await setUp()
    await cut.on()
    const event = makeEvent()
    await h.ingest([event])
    h.worker.wake()
    await vi.waitFor(() => expect(logs.find(/trying again while their claims hold/)).toHaveLength(1), WAIT)
    // The clock does not move: a stop that waited for the next try would never end.
    await h.worker.stop()
    expect(logs.find(/^could not record delivery outcomes$/)).toMatchObject([{ deliveries: 1 }])
    await cut.off()
    // Still claimed: sent again once its claim lapses (at least once), as after a crash.
    expect(await h.rt.store.db.selectFrom('destination_deliveries').select(['status', 'claimed_by']).execute()).toEqual([{ status: 'pending', claimed_by: expect.any(String) }])
    expect(s.requests).toHaveLength(1)
  })

  it('outcomes written row by row after a refused commit are written again while the database cannot take them for a moment, and not sent again', async () => {
    const all = together(3)
    const refused = await sink(all((res) => res.writeHead(500).end('refuse me')))
    const crm = await sink(all((res) => res.writeHead(204).end()))
    const erp = await sink(all((res) => res.writeHead(204).end()))
    const { h, logs } = await loggedHarness([
      destination(refused, { name: 'refused', retryScheduleMs: [60_000] }),
      destination(crm),
      destination(erp, { name: 'erp' }),
    ])
    const cut = await cutOnceRefused(h.rt, dialect)
    const event = makeEvent()
    await h.ingest([event])
    h.worker.wake()
    // The three outcomes share a commit, which the database refuses for one row; written row by row, a delivered one
    // meets the dropped connection.
    await vi.waitFor(() => expect(logs.find(/^could not record a delivery outcome; trying again while its claim holds$/)).toHaveLength(1), WAIT)
    await cut.lift()
    await vi.waitFor(async () => {
      await h.clock.advance(1_000)
      expect((await h.status()).sort((a, b) => a.destination.localeCompare(b.destination))).toMatchObject([
        { destination: 'crm', status: 'delivered', attempts: 1 },
        { destination: 'erp', status: 'delivered', attempts: 1 },
        { destination: 'refused', status: 'pending', attempts: 0 },
      ])
    }, WAIT)
    // The row-by-row writes end: the refused row may come last.
    await h.worker.idle()
    const delivered = [deliveryId('crm', event.event_id), deliveryId('erp', event.event_id)]
    const told = logs.find(/^could not record a delivery outcome; trying again while its claim holds$/)
    expect(told).toMatchObject([{ delivery_id: expect.toBeOneOf(delivered), event_id: event.event_id }])
    expect(told[0]!.err).toMatch(dialect === 'sqlite' ? /unable to open database file/ : /terminating connection due to administrator command|Connection terminated/)
    expect(logs.find(/^recorded the delivery outcome once the database took it$/)).toMatchObject([{ delivery_id: told[0]!.delivery_id }])
    // Only the refused one is left to its claim; none after it is.
    expect(logs.find(/its claim lapses and it is sent again$/)).toMatchObject([{ delivery_id: deliveryId('refused', event.event_id) }])
    expect(logs.find(/^could not record delivery outcomes$/)).toEqual([])
    // Past every claim's lapse (timeoutMs + 15 s): the recorded ones do not go out again (the refused one does, at
    // least once).
    await h.clock.advance(30_000)
    await h.worker.idle()
    expect(crm.requests).toHaveLength(1)
    expect(erp.requests).toHaveLength(1)
  })

  it.runIf(dialect === 'sqlite')('outcomes waiting behind one written again keep their claims meanwhile: a database that flaps for a while sends nothing twice', async () => {
    const names = ['crm', 'erp', 'billing', 'ledger', 'audit', 'warehouse']
    const all = together(names.length + 1)
    const refused = await sink(all((res) => res.writeHead(500).end('refuse me')))
    const sinks = await Promise.all(names.map(() => sink(all((res) => res.writeHead(204).end()))))
    const { h, logs } = await loggedHarness([
      destination(refused, { name: 'refused', retryScheduleMs: [600_000] }),
      ...sinks.map((s, i) => destination(s, { name: names[i]! })),
    ])
    // From the first refusal on, each delivered outcome's write fails four times (the database gone for a moment), then
    // goes in: ~4 s a row written one by one, six rows in a line — past the claims (timeoutMs + 15 s) of the last ones.
    let refusedOnce = false
    const failures = new Map<string, number>()
    const sqlite = h.rt.store.sqlite!
    sqlite.function('test_refused', () => {
      refusedOnce = true
      return 0
    })
    sqlite.function('test_flap', (id: unknown) => {
      const n = failures.get(String(id)) ?? 0
      if (refusedOnce && n < 4) {
        failures.set(String(id), n + 1)
        throw Object.assign(new Error('unable to open database file'), { code: 'SQLITE_CANTOPEN' })
      }
      return 0
    })
    sqlite.exec(`create temp trigger test_refuse before insert on destination_attempts
      when new.response = 'refuse me' begin select test_refused(); select raise(abort, 'refused by the test'); end;
      create temp trigger test_flap before update of status on destination_deliveries
      when new.status = 'delivered' begin select test_flap(new.id); end`)
    await h.ingest([makeEvent()])
    h.worker.wake()
    await vi.waitFor(() => expect(logs.find(/^could not record a delivery outcome; trying again while its claim holds$/).length).toBeGreaterThan(0), WAIT)
    // A second event meanwhile: its outcomes land while the first pass is still going, and wait for it.
    await h.ingest([makeEvent()])
    h.worker.wake()
    await vi.waitFor(() => expect(sinks.map((s) => s.requests.length)).toEqual(names.map(() => 2)), WAIT)
    await vi.waitFor(async () => {
      await h.clock.advance(1_000)
      const delivered = (await h.status()).filter((d) => d.status === 'delivered')
      expect(delivered).toHaveLength(2 * names.length)
    }, { ...WAIT, timeout: 60_000 })
    await h.worker.idle()
    expect(logs.find(/claims are no longer this worker's/)).toEqual([])
    // Past every claim's lapse: none of the twelve goes out again.
    await h.clock.advance(60_000)
    await h.worker.idle()
    expect(sinks.map((s) => s.requests.length)).toEqual(names.map(() => 2))
  })

  it('the claims renewed between tries are only those still held as this worker knows them, never shortened', async () => {
    const rt = await createTestRuntime({ dialect })
    try {
      const at = rt.clock.now()
      const row = (eventId: string, claimedBy: string, claimedUntil: number) => ({
        id: deliveryId('crm', eventId), destination: 'crm', event_id: eventId, event_type: 'call.completed', conversation_id: null, payload: '',
        order_at: at * 1000, ordered: 0, status: 'pending', attempts: 0, round_attempts: 0, next_attempt_at: at, claimed_by: claimedBy,
        claimed_until: claimedUntil, last_status: null, last_error: null, created_at: at, delivered_at: null,
      })
      await rt.store.db.insertInto('destination_deliveries').values([
        row('evt_held', 'me', at + 2_000),
        row('evt_longer', 'me', at + 60_000),
        // Lapsed and claimed since: by another replica, and afresh by this worker (another claim of the same owner).
        row('evt_taken', 'other', at + 20_000),
        row('evt_again', 'me', at + 20_000),
      ]).execute()
      const known = (eventId: string, claimedUntil: number) => ({ id: deliveryId('crm', eventId), claimedUntil })
      const renewed = await renewClaims(rt, 'me', [known('evt_held', at + 2_000), known('evt_longer', at + 60_000), known('evt_taken', at + 2_000), known('evt_again', at + 2_000)], at + 10_000)
      expect(Object.fromEntries(renewed)).toEqual({ [deliveryId('crm', 'evt_held')]: at + 10_000, [deliveryId('crm', 'evt_longer')]: at + 60_000 })
      const claims = await rt.store.db.selectFrom('destination_deliveries').select(['event_id', 'claimed_by', 'claimed_until']).orderBy('event_id').execute()
      expect(claims.map((c) => [c.event_id, c.claimed_by, Number(c.claimed_until) - at])).toEqual([
        ['evt_again', 'me', 20_000], ['evt_held', 'me', 10_000], ['evt_longer', 'me', 60_000], ['evt_taken', 'other', 20_000],
      ])
    } finally {
      await rt.close()
    }
  })
})
