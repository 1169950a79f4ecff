import { afterEach, expect, it } from 'vitest'
import { claimFireBatch, enqueueEventFires, finishFires, releaseFires } from '../../src/recipes/claims.ts'
import { RUN_STALE_MS } from '../../src/recipes/overlap.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createHarness, type Harness } from '../webhooks/helpers.ts'

/**
 * A recipe's event queue in batches larger than one statement's chunk: a burst's fires are queued together
 * (once per recipe and event, whatever was queued before) and a whole claimed batch is finished at once.
 */
describeEachDialect('recipe event queue, batch by batch', (dialect) => {
  let h: Harness
  afterEach(async () => h?.close())

  const pairs = (recipe: string, from: number, to: number) =>
    Array.from({ length: to - from }, (_, i) => ({ recipe, eventId: `evt_fire_${String(from + i).padStart(4, '0')}` }))
  const count = async (recipe: string, status: string) =>
    Number((await h.rt.store.db.selectFrom('recipe_event_fires').select((eb) => eb.fn.countAll().as('n')).where('recipe', '=', recipe).where('status', '=', status).executeTakeFirstOrThrow()).n)

  it('queues 600 fires across chunks once each, returning only the new ones', async () => {
    h = await createHarness(dialect)
    // 100 queued before (a redelivery, another replica), then a batch of 600 that repeats them.
    expect(await enqueueEventFires(h.rt, pairs('followup', 0, 100))).toHaveLength(100)
    const batch = [...pairs('followup', 0, 500), ...pairs('digest', 0, 100)]
    const fresh = await enqueueEventFires(h.rt, batch)
    expect(fresh).toHaveLength(500)
    expect(fresh.filter((f) => f.recipe === 'followup').map((f) => f.eventId)).toEqual(pairs('followup', 100, 500).map((p) => p.eventId))
    expect(fresh.filter((f) => f.recipe === 'digest')).toHaveLength(100)
    expect(await count('followup', 'pending')).toBe(500)
    // The same batch again: nothing new.
    expect(await enqueueEventFires(h.rt, batch)).toEqual([])
  })

  it('finishes a claimed batch of 400 in one go, and only the claimant\'s rows', async () => {
    h = await createHarness(dialect)
    await enqueueEventFires(h.rt, pairs('followup', 0, 450))
    const claimed = await claimFireBatch(h.rt, 'followup', 'worker-a', 400, 10_000)
    expect(claimed).toHaveLength(400)
    const ids = claimed.map((r) => r.event_id)
    // Another owner's outcome for the same ids is refused: the claim guards the rows.
    await finishFires(h.rt, 'followup', 'worker-b', ids, { status: 'done', runId: 'run_b' })
    expect(await count('followup', 'done')).toBe(0)
    await finishFires(h.rt, 'followup', 'worker-a', ids, { status: 'done', runId: 'run_a' })
    expect(await count('followup', 'done')).toBe(400)
    expect(await count('followup', 'pending')).toBe(50)
    const runs = await h.rt.store.db.selectFrom('recipe_event_fires').select(['run_id', 'claimed_by']).where('status', '=', 'done').execute()
    expect(new Set(runs.map((r) => `${r.run_id}|${r.claimed_by}`))).toEqual(new Set(['run_a|null']))
    // A failed outcome counts an attempt and sets the retry time.
    const rest = await claimFireBatch(h.rt, 'followup', 'worker-a', 400, 10_000)
    await finishFires(h.rt, 'followup', 'worker-a', rest.map((r) => r.event_id), { status: 'failed', runId: null, error: 'boom', nextAttemptAt: 123 })
    const failed = await h.rt.store.db.selectFrom('recipe_event_fires').select(['attempts', 'next_attempt_at', 'last_error']).where('status', '=', 'failed').execute()
    expect(failed).toHaveLength(50)
    expect(failed.every((f) => Number(f.attempts) === 1 && Number(f.next_attempt_at) === 123 && f.last_error === 'boom')).toBe(true)
    // Nothing to finish is a no-op.
    await finishFires(h.rt, 'followup', 'worker-a', [], { status: 'done', runId: 'run_c' })
  })

  it('claims nothing while a real run of the recipe is going, even one that started after the caller looked', async () => {
    h = await createHarness(dialect)
    await enqueueEventFires(h.rt, [...pairs('followup', 0, 3), ...pairs('digest', 0, 1)])
    const run = (id: string, recipe: string, fields: { dry_run?: number; started_at?: number } = {}) =>
      h.rt.store.db.insertInto('recipe_runs').values({ id, recipe, trigger: 'manual', event_id: null, dry_run: 0, status: 'running', started_at: h.clock.now(), ended_at: null, summary: null, plan: null, error: null, process: null, ...fields }).execute()
    // A dry run does not hold the queue back.
    await run('run_dry', 'followup', { dry_run: 1 })
    expect(await claimFireBatch(h.rt, 'followup', 'worker-a', 1, 10_000)).toHaveLength(1)
    // A real one does (its own recipe's queue only); a claim is not taken in its shadow.
    await run('run_real', 'followup')
    expect(await claimFireBatch(h.rt, 'followup', 'worker-a', 10, 10_000)).toEqual([])
    expect(await claimFireBatch(h.rt, 'digest', 'worker-a', 10, 10_000)).toHaveLength(1)
    // Once it has ended, the rest are claimed.
    await h.rt.store.db.updateTable('recipe_runs').set({ status: 'succeeded', ended_at: h.clock.now() }).where('id', '=', 'run_real').execute()
    expect(await claimFireBatch(h.rt, 'followup', 'worker-a', 10, 10_000)).toHaveLength(2)
    // A run still marked running past RUN_STALE_MS is a crashed process's: it holds nothing back.
    await enqueueEventFires(h.rt, pairs('followup', 3, 4))
    await run('run_crashed', 'followup', { started_at: h.clock.now() - RUN_STALE_MS - 1 })
    expect(await claimFireBatch(h.rt, 'followup', 'worker-a', 10, 10_000)).toHaveLength(1)
  })

  it('hands a claimed batch of 300 back untouched, and only the claimant can', async () => {
    h = await createHarness(dialect)
    await enqueueEventFires(h.rt, pairs('followup', 0, 300))
    const ids = (await claimFireBatch(h.rt, 'followup', 'worker-a', 300, 10_000)).map((r) => r.event_id)
    expect(ids).toHaveLength(300)
    await releaseFires(h.rt, 'followup', 'worker-b', ids)
    expect(await claimFireBatch(h.rt, 'followup', 'worker-c', 300, 10_000)).toEqual([])
    await releaseFires(h.rt, 'followup', 'worker-a', ids)
    const back = await claimFireBatch(h.rt, 'followup', 'worker-c', 300, 10_000)
    expect(back).toHaveLength(300)
    expect(back.every((r) => r.status === 'pending' && Number(r.attempts) === 0)).toBe(true)
    await releaseFires(h.rt, 'followup', 'worker-c', [])
  })
})
