import { afterEach, expect, it } from 'vitest'
import { getEvent } from '../../src/webhooks/index.ts'
import { pendingRow } from '../../src/webhooks/inbox.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { cliEnv, createHarness, runCli, type Harness } from './helpers.ts'

/**
 * Before 0.20.1 the receiver stored a signed body nested 10,000 deep, and then everything that showed it failed —
 * JSON.stringify ran out of stack: its dashboard page and `GET /admin/events/:id` answered 500, `events show` exited 1.
 * The receiver refuses such bodies now; those stored before are shown as the text they are.
 */
describeEachDialect('an event stored nested deeper than switchboard takes', (dialect) => {
  let h: Harness | undefined
  afterEach(async () => {
    await h?.close()
    h = undefined
  })

  it('is shown as its text: the event detail and `events show`', async () => {
    h = await createHarness(dialect)
    const body = `{"event_id":"evt_deep_old","event_type":"call.completed","data":{"results":{"a":${'['.repeat(10_000)}${']'.repeat(10_000)}}}}`
    await h.rt.store.db
      .insertInto('webhook_events')
      .values(pendingRow({ event_id: 'evt_deep_old', target: 'formant', event_type: 'call.completed', conversation_id: null, trace_id: null, agent_id: null, body, headers: '{}', source: 'webhook' }, h.clock.now()))
      .execute()
    expect((await getEvent(h.rt, 'evt_deep_old'))?.body).toBe(body)
    const shown = await runCli(['events', 'show', 'evt_deep_old', '--json'], cliEnv(h.rt))
    expect([shown.code, shown.err]).toEqual([0, ''])
    expect((JSON.parse(shown.out) as { body: unknown }).body).toBe(body)
  })
})
