import { afterEach, expect, it } from 'vitest'
import { createApp } from '../../src/server.ts'
import { pendingRow } from '../../src/webhooks/inbox.ts'
import { drainDue, replayEvent, requeueEvent } from '../../src/webhooks/processing.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createHarness, makeEvent, type Harness } from '../webhooks/helpers.ts'

describeEachDialect('backlog you can see', (dialect) => {
  let h: Harness
  afterEach(async () => h?.close())

  it('/metrics reports pending events and their age; /readyz turns degraded past BACKLOG_DEGRADED_SECONDS', async () => {
    h = await createHarness(dialect, { BACKLOG_DEGRADED_SECONDS: '30' })
    const app = createApp(h.rt)
    const get = (path: string) => app.fetch(new Request(`http://localhost${path}`))
    expect(await (await get('/readyz')).json()).toMatchObject({ status: 'ready', backlog: { pending: 0, oldest_age_seconds: 0 } })
    for (let i = 0; i < 3; i++) expect((await h.send(makeEvent())).status).toBe(204)
    await h.clock.advance(31_000)
    const ready = await get('/readyz')
    expect(ready.status).toBe(200)
    expect(await ready.json()).toMatchObject({
      status: 'degraded', role: 'all', backlog: { pending: 3, oldest_age_seconds: 31 },
      reason: 'the oldest unprocessed event is 31 s old (BACKLOG_DEGRADED_SECONDS=30)',
    })
    const metrics = await (await get('/metrics')).text()
    expect(metrics).toContain('switchboard_events_pending{role="all"} 3')
    expect(metrics).toContain('switchboard_events_oldest_pending_age_seconds{role="all"} 31')
    // Three deliveries one after another: three group commits of one.
    expect(metrics).toContain('switchboard_webhook_commit_batch_size_sum 3')
    expect(metrics).toContain('switchboard_webhook_commit_batch_size_count 3')
    for (const name of ['switchboard_processing_lag_seconds', 'switchboard_recipe_runs_total', 'switchboard_recipe_run_seconds']) expect(metrics).toContain(`# TYPE ${name}`)
    // Processing's holds for the receiver: listed at zero before the first one.
    expect(metrics).toContain('switchboard_processing_held_seconds_total 0')
    expect(metrics).toContain('switchboard_processing_held 0')
  })

  it('/readyz compares the age in the whole seconds it shows: never "10 s old (BACKLOG_DEGRADED_SECONDS=10)"', async () => {
    h = await createHarness(dialect, { BACKLOG_DEGRADED_SECONDS: '10' })
    const app = createApp(h.rt)
    const ready = async () => (await app.fetch(new Request('http://localhost/readyz'))).json()
    expect((await h.send(makeEvent())).status).toBe(204)
    await h.clock.advance(10_900)
    expect(await ready()).toMatchObject({ status: 'ready', backlog: { oldest_age_seconds: 10 } })
    await h.clock.advance(100)
    expect(await ready()).toMatchObject({ status: 'degraded', backlog: { oldest_age_seconds: 11 }, reason: 'the oldest unprocessed event is 11 s old (BACKLOG_DEGRADED_SECONDS=10)' })
  })

  it('a replayed event is not observed as processing lag: an event of last week replayed now is not a week behind', async () => {
    h = await createHarness(dialect)
    const lagCount = async () => Number(/^switchboard_processing_lag_seconds_count\{source="webhook"\} (\d+)$/m.exec(await h.rt.metrics.metrics())?.[1] ?? 0)
    const lagSum = async () => Number(/^switchboard_processing_lag_seconds_sum\{source="webhook"\} (\S+)$/m.exec(await h.rt.metrics.metrics())?.[1] ?? 0)
    const first = makeEvent()
    const second = makeEvent()
    for (const e of [first, second]) expect((await h.send(e)).status).toBe(204)
    await h.clock.advance(2_000)
    await drainDue(h.rt)
    expect(await lagCount()).toBe(2)
    const sum = await lagSum()
    await h.clock.advance(7 * 86_400_000)
    // Run at once (the dashboard, /admin), and queued for the workers (`events replay` beside a running service).
    await replayEvent(h.rt, first.event_id)
    expect(await requeueEvent(h.rt, second.event_id)).toBe(true)
    await drainDue(h.rt)
    expect(await lagCount()).toBe(2)
    expect(await lagSum()).toBe(sum)
  })

  it('a backlog too large to count on the receiver\'s event loop: counted up to 10,000, the oldest still exact', async () => {
    h = await createHarness(dialect, { BACKLOG_DEGRADED_SECONDS: '30' })
    const app = createApp(h.rt)
    const get = (path: string) => app.fetch(new Request(`http://localhost${path}`))
    const at = h.clock.now()
    const rows = Array.from({ length: 10_005 }, (_, i) =>
      pendingRow({ event_id: `evt_big_${i}`, target: 'formant', event_type: 'call.completed', conversation_id: null, trace_id: null, agent_id: null, body: '{}', headers: '{}', source: 'webhook' }, at + i),
    )
    for (let i = 0; i < rows.length; i += 500) await h.rt.store.db.insertInto('webhook_events').values(rows.slice(i, i + 500)).execute()
    await h.clock.advance(45_000)
    expect(await (await get('/readyz')).json()).toMatchObject({
      status: 'degraded', backlog: { pending: 10_000, pending_counted_up_to: 10_000, oldest_age_seconds: 45 },
    })
    const metrics = await (await get('/metrics')).text()
    expect(metrics).toContain('switchboard_events_pending{role="all"} 10000')
    expect(metrics).toContain('switchboard_events_oldest_pending_age_seconds{role="all"} 45')
    // Under the cap the count is exact and the body says nothing of a cap.
    const deleted = await h.rt.store.db.deleteFrom('webhook_events').where('event_id', 'like', 'evt_big_1%').executeTakeFirst()
    expect(Number(deleted.numDeletedRows)).toBe(1_116) // evt_big_1, _10…_19, _100…_199, _1000…_1999, _10000…_10004
    const body = (await (await get('/readyz')).json()) as { backlog: Record<string, number> }
    expect(body.backlog.pending).toBe(10_005 - 1_116)
    expect(body.backlog).not.toHaveProperty('pending_counted_up_to')
  })
})
