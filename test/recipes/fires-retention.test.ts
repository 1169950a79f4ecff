import { afterEach, expect, it } from 'vitest'
import { purgeOldFires } from '../../src/recipes/retention.ts'
import { purgeOldEvents } from '../../src/webhooks/index.ts'
import { acquireLease } from '../../src/webhooks/lease.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createHarness, makeEvent, type Harness } from '../webhooks/helpers.ts'

const DAY = 86_400_000

/**
 * A recipe's queue row for an event (`recipe_event_fires`) is what makes it run once per event; it is purged only
 * once it can no longer matter: finished (done or dead), older than the retention window, and its event gone.
 */
describeEachDialect('recipe fires retention', (dialect) => {
  let h: Harness | undefined
  afterEach(async () => {
    await h?.close()
    h = undefined
  })

  async function fire(eventId: string, status: string, firedAt: number, recipe = 'followup'): Promise<void> {
    await h!.rt.store.db.insertInto('recipe_event_fires').values({ recipe, event_id: eventId, fired_at: firedAt, status, claimed_by: null, claimed_until: null, run_id: null, last_error: null }).execute()
  }
  const left = async () =>
    (await h!.rt.store.db.selectFrom('recipe_event_fires').select(['recipe', 'event_id']).orderBy('event_id').orderBy('recipe').execute()).map((r) => `${r.recipe}/${r.event_id}`)

  it('purges finished fires past the window whose event is gone, in chunks; keeps every other one', async () => {
    h = await createHarness(dialect)
    const old = h.clock.now()
    // Events received now, then processed: purged with the window, except one still pending.
    const kept = makeEvent({ event_id: 'evt_kept_pending' })
    await h.send(kept)
    for (let i = 0; i < 7; i++) await fire(`evt_gone_${i}`, i % 2 ? 'dead' : 'done', old)
    await fire('evt_gone_0', 'done', old, 'report')
    await fire('evt_gone_pending_fire', 'pending', old)
    await fire('evt_gone_failed_fire', 'failed', old)
    await fire(kept.event_id, 'done', old)
    await h.clock.advance(31 * DAY)
    await fire('evt_recent', 'done', h.clock.now() - DAY)
    await purgeOldEvents(h.rt)

    // Chunks of 3: the 8 finished fires of gone events go in three statements.
    expect(await purgeOldFires(h.rt, { chunk: 3 })).toEqual({ fires: 8, skipped: false })
    expect(await left()).toEqual([
      'followup/evt_gone_failed_fire',
      'followup/evt_gone_pending_fire',
      `followup/${kept.event_id}`,
      'followup/evt_recent',
    ])
    expect(await purgeOldFires(h.rt)).toEqual({ fires: 0, skipped: false })
  })

  it('one replica at a time (lease)', async () => {
    h = await createHarness(dialect)
    expect(await acquireLease(h.rt, 'recipes:purge-fires', 60_000, 'other-replica')).toBe(true)
    expect(await purgeOldFires(h.rt)).toEqual({ fires: 0, skipped: true })
  })
})
