import { afterEach, beforeEach, expect, it } from 'vitest'
import { firesForEvent, reviveEventFires } from '../../src/recipes/claims.ts'
import { listRuns } from '../../src/recipes/runner.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { capturePrepared, queryPlan } from '../helpers/query-plans.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

/**
 * Recipe runs (one per event batch) and queue rows (one per event and recipe) add up over a month. Looking up a few of
 * them — an event's queue rows and runs, the newest runs of every recipe — reads an index, never the whole table.
 */
describeEachDialect('recipe runs and queue rows looked up by event, and every recipe\'s newest runs', (dialect) => {
  let rt: TestRuntime
  beforeEach(async () => {
    rt = await createTestRuntime({ dialect })
    const fire = (recipe: string, eventId: string, status: string) =>
      rt.store.db.insertInto('recipe_event_fires').values({ recipe, event_id: eventId, fired_at: 1_000, status, attempts: status === 'done' ? 1 : 3, next_attempt_at: 1_000, claimed_by: null, claimed_until: null, run_id: null, last_error: status === 'dead' ? 'boom' : null }).execute()
    await fire('followup', 'evt_a', 'dead')
    await fire('report', 'evt_a', 'failed')
    await fire('followup', 'evt_b', 'done')
    await fire('report', 'evt_b', 'dead')
    const run = (id: string, recipe: string, startedAt: number, eventId: string | null) =>
      rt.store.db.insertInto('recipe_runs').values({ id, recipe, trigger: eventId ? 'event' : 'cron', event_id: eventId, dry_run: 0, status: 'succeeded', started_at: startedAt, ended_at: startedAt + 5, summary: null, plan: null, error: null, process: null }).execute()
    await run('run_1', 'followup', 100, 'evt_a')
    await run('run_2', 'report', 200, null)
    await run('run_3', 'followup', 300, 'evt_b')
    await run('run_4', 'report', 300, 'evt_a')
    await run('run_5', 'followup', 400, null)
  })
  afterEach(async () => {
    await rt.close()
  })

  it('finds them, in order', async () => {
    const prepared = dialect === 'sqlite' ? capturePrepared(rt.store.sqlite!) : undefined
    try {
      expect(await firesForEvent(rt, 'evt_a')).toEqual([
        { recipe: 'followup', firedAt: 1_000, status: 'dead', attempts: 3, runId: null, error: 'boom' },
        { recipe: 'report', firedAt: 1_000, status: 'failed', attempts: 3, runId: null, error: null },
      ])
      expect(await firesForEvent(rt, 'evt_none')).toEqual([])
      // Newest first across recipes; two runs started in the same millisecond by id, the greater first.
      expect((await listRuns(rt, { limit: 3 })).map((r) => r.id)).toEqual(['run_5', 'run_4', 'run_3'])
      expect((await listRuns(rt)).map((r) => r.id)).toEqual(['run_5', 'run_4', 'run_3', 'run_2', 'run_1'])
      expect((await listRuns(rt, { recipe: 'report' })).map((r) => r.id)).toEqual(['run_4', 'run_2'])
      expect((await listRuns(rt, { eventId: 'evt_a' })).map((r) => r.id)).toEqual(['run_4', 'run_1'])
      // A replay revives the event's dead and failed rows of every recipe, and leaves other events' alone.
      expect(await reviveEventFires(rt, 'evt_a')).toBe(2)
    } finally {
      prepared?.stop()
    }
    const rows = await rt.store.db.selectFrom('recipe_event_fires').select(['recipe', 'event_id', 'status', 'attempts']).orderBy('event_id').orderBy('recipe').execute()
    expect(rows).toEqual([
      { recipe: 'followup', event_id: 'evt_a', status: 'pending', attempts: 0 },
      { recipe: 'report', event_id: 'evt_a', status: 'pending', attempts: 0 },
      { recipe: 'followup', event_id: 'evt_b', status: 'done', attempts: 1 },
      { recipe: 'report', event_id: 'evt_b', status: 'dead', attempts: 3 },
    ])
    if (!prepared) return
    // Each lookup searches an index; the only scans are the recipe probes (one row each: `order by … limit 1`).
    const lookups = prepared.texts.filter((t) => /"recipe_(event_fires|runs)"/.test(t) && !/ as "?key"? /.test(t))
    expect(lookups).toHaveLength(4)
    for (const text of lookups) expect({ text, plan: queryPlan(rt.store.sqlite!, text, 'x') }).not.toMatchObject({ plan: expect.arrayContaining([expect.stringMatching(/^SCAN recipe_(event_fires|runs)\b/)]) })
  })
})
