import { sql } from 'kysely'
import { expect, it, vi } from 'vitest'
import { deliveryId } from '../../src/destinations/sign.ts'
import { startDeliveryWorker } from '../../src/destinations/worker.ts'
import type { Dialect } from '../../src/db/connect.ts'
import type { Runtime } from '../../src/runtime.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { adminHeaders, closedAfterEach, createForwardHarness, destination, makeEvent, together, WAIT, type ForwardHarness } from './helpers.ts'

// Real HTTP on a shared, busy machine.
vi.setConfig({ testTimeout: 60_000 })

/** The first bytes of a gzip stream: a 500 with a compressed body, as some frameworks answer. */
const GZIP_HEAD = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03])

/** Makes the database refuse the attempt row of any attempt answered `refuse me` (a row-level error, as U+0000 was). */
async function refuseAttemptsAnswered(rt: Runtime, dialect: Dialect): Promise<void> {
  if (dialect === 'sqlite') {
    await sql`create trigger test_refuse before insert on destination_attempts when new.response = 'refuse me' begin select raise(abort, 'refused by the test'); end`.execute(rt.store.db)
    return
  }
  await sql`create function test_refuse() returns trigger language plpgsql as $$
    begin
      if new.response = 'refuse me' then raise exception 'refused by the test' using errcode = 'check_violation'; end if;
      return new;
    end $$`.execute(rt.store.db)
  await sql`create trigger test_refuse before insert on destination_attempts for each row execute function test_refuse()`.execute(rt.store.db)
}

describeEachDialect('destinations: answers and outcomes the database could refuse', (dialect) => {
  let h: ForwardHarness | undefined
  const sink = closedAfterEach(() => {
    const current = h
    h = undefined
    return current
  })

  const row = async (name: string) => (await h!.status()).find((r) => r.destination === name)

  it('a sink answering 500 with a binary body: its attempt is kept as readable text, and the outcomes committed with it are not lost', async () => {
    const both = together(2)
    const binary = await sink(both((res) => res.writeHead(500, { 'content-type': 'application/gzip' }).end(GZIP_HEAD)))
    const healthy = await sink(both((res) => res.writeHead(204).end()))
    h = await createForwardHarness(dialect, [destination(binary, { name: 'gzip', retryScheduleMs: [60_000] }), destination(healthy)])
    const event = makeEvent()
    await h.ingest([event])
    await vi.waitFor(() => expect(binary.requests.length + healthy.requests.length).toBe(2), WAIT)
    await h.worker.idle()

    expect(await row('crm')).toMatchObject({ status: 'delivered', attempts: 1 })
    expect(await row('gzip')).toMatchObject({ status: 'pending', attempts: 1 })
    const res = await h.app.fetch(new Request(`http://localhost/admin/destinations/deliveries/${deliveryId('gzip', event.event_id)}`, { headers: adminHeaders }))
    const { data } = (await res.json()) as { data: { attempt_log: Array<{ status: number; result: string; response: string }> } }
    // NUL bytes as U+FFFD, like the bytes that are not UTF-8: no byte Postgres refuses, the rest as it came.
    expect(data.attempt_log).toMatchObject([{ status: 500, result: 'retry', response: '\u001f\uFFFD\u0008\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\u0003' }])

    // Past every claim's lapse (timeoutMs + 15 s) and before the retry (60 s): nothing goes out again.
    await h.clock.advance(20_000)
    await h.worker.idle()
    expect(healthy.requests).toHaveLength(1)
    expect(binary.requests).toHaveLength(1)
  })

  it('an outcome the database refuses is logged and does not take the other outcomes of its commit with it', async () => {
    const all = together(3)
    const refused = await sink(all((res) => res.writeHead(500).end('refuse me')))
    const failing = await sink(all((res) => res.writeHead(500).end('boom')))
    const healthy = await sink(all((res) => res.writeHead(204).end()))
    h = await createForwardHarness(dialect, [
      destination(refused, { name: 'refused', retryScheduleMs: [60_000] }),
      destination(failing, { name: 'failing', retryScheduleMs: [60_000] }),
      destination(healthy),
    ])
    await refuseAttemptsAnswered(h.rt, dialect)
    // This test's worker logs to a logger it can read.
    const logs = captureLogs('error')
    await h.worker.stop()
    h.worker = startDeliveryWorker({ ...h.rt, log: logs.log })
    const event = makeEvent()
    await h.ingest([event])
    h.worker.wake()
    await vi.waitFor(() => expect(refused.requests.length + failing.requests.length + healthy.requests.length).toBe(3), WAIT)
    await h.worker.idle()

    expect(await row('crm')).toMatchObject({ status: 'delivered', attempts: 1 })
    expect(await row('failing')).toMatchObject({ status: 'pending', attempts: 1 })
    const attempts = await h.rt.store.db.selectFrom('destination_attempts').select(['delivery_id', 'response']).execute()
    expect(attempts).toEqual([{ delivery_id: deliveryId('failing', event.event_id), response: 'boom' }])
    // The refused one is not recorded: its claim lapses and it goes out again (at least once), named in the log.
    expect(await row('refused')).toMatchObject({ status: 'pending', attempts: 0 })
    expect(logs.find(/could not record a delivery outcome/)).toMatchObject([{ delivery_id: deliveryId('refused', event.event_id), attempt: 1, result: 'retry' }])
  })
})
