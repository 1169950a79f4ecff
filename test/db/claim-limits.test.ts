import { afterEach, expect, it } from 'vitest'
import { pendingRow } from '../../src/webhooks/inbox.ts'
import { claimDue } from '../../src/webhooks/processing.ts'
import { claimFireBatch, enqueueEventFires } from '../../src/recipes/claims.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createHarness, makeEvent, type Harness } from '../webhooks/helpers.ts'

/**
 * A claim takes at most its limit, however the database plans it. On Postgres an UPDATE … WHERE id IN (sub-select
 * with LIMIT, FOR UPDATE SKIP LOCKED) was planned, on tables without statistics yet, as a nested loop that ran the
 * sub-select again for every row — and rows tied on their due time (a burst's) let each run lock a different
 * LIMIT of them: 450 rows claimed with LIMIT 400 (src/db/in-claim-subquery.ts).
 */
describeEachDialect('claims stay within their limit', (dialect) => {
  let h: Harness
  afterEach(async () => h?.close())

  it('webhook events: 450 due at the same millisecond, claimed 400 and then the other 50', async () => {
    h = await createHarness(dialect)
    const now = h.clock.now()
    const rows = Array.from({ length: 450 }, (_, i) => {
      const event = makeEvent({ event_id: `evt_limit_${String(i).padStart(4, '0')}` })
      return pendingRow({ event_id: event.event_id, target: 'formant', event_type: event.event_type, conversation_id: null, trace_id: null, agent_id: null, body: JSON.stringify(event), headers: '{}', source: 'webhook' }, now)
    })
    for (let i = 0; i < rows.length; i += 150) await h.rt.store.db.insertInto('webhook_events').values(rows.slice(i, i + 150)).execute()
    const first = await claimDue(h.rt, 'worker-a', 400)
    expect(first).toHaveLength(400)
    const second = await claimDue(h.rt, 'worker-b', 400)
    expect(second).toHaveLength(50)
    expect(new Set([...first, ...second].map((r) => r.event_id)).size).toBe(450)
  })

  it('recipe fires: a batch is never larger than asked for', async () => {
    h = await createHarness(dialect)
    await enqueueEventFires(h.rt, Array.from({ length: 450 }, (_, i) => ({ recipe: 'followup', eventId: `evt_fire_${i}` })))
    expect(await claimFireBatch(h.rt, 'followup', 'worker-a', 400, 10_000)).toHaveLength(400)
    expect(await claimFireBatch(h.rt, 'followup', 'worker-b', 400, 10_000)).toHaveLength(50)
  })
})
