import { afterEach, expect, it } from 'vitest'
import { purgeOldEvents } from '../../src/webhooks/index.ts'
import { capturePrepared, queryPlan } from '../helpers/query-plans.ts'
import { createHarness, makeEvent, type Harness } from './helpers.ts'

/**
 * The retention purge's DELETE on SQLite finds the rows it deletes by their id (the primary key), from the ids its
 * subquery picks through the (status, received_at) index. A condition on status or age on the DELETE itself once made
 * SQLite walk that index over every expired event for each chunk: 76 events deleted a second, and the receiver's
 * p99 at 270 ms while the purge ran (`npm run bench -- ingest`), against ~230/s and ~25 ms.
 */
let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

it('on SQLite the purge deletes by primary key, each chunk from its subquery\'s ids', async () => {
  h = await createHarness('sqlite')
  const old = makeEvent()
  expect((await h.send(old)).status).toBe(204)
  await h.rt.store.db.updateTable('webhook_events').set({ status: 'processed' }).execute()
  await h.clock.advance(31 * 86_400_000)
  const sqlite = h.rt.store.sqlite!
  const prepared = capturePrepared(sqlite)
  try {
    expect((await purgeOldEvents(h.rt)).events).toBe(1)
  } finally {
    prepared.stop()
  }
  const purge = prepared.texts.find((text) => /^delete from "webhook_events"/i.test(text))!
  expect(queryPlan(sqlite, purge)).toEqual([
    expect.stringMatching(/^SEARCH webhook_events USING (COVERING )?INDEX sqlite_autoindex_webhook_events_1 \(event_id=\?\)$/),
    'LIST SUBQUERY 1',
    expect.stringMatching(/^SEARCH e USING INDEX webhook_events_status_received_keys \(status=\? AND received_at<\?\)$/),
  ])
})
