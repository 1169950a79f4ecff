import { afterEach, expect, it } from 'vitest'
import { createApp } from '../../src/server.ts'
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
  })
})
