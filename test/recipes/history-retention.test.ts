import { afterEach, expect, it } from 'vitest'
import { latestTickClaim } from '../../src/recipes/claims.ts'
import { purgeRecipeHistory } from '../../src/recipes/retention.ts'
import { decodePlan, encodePlan, KEPT_EFFECTS, KEPT_ROWS, MAX_PLAN_CHARS } from '../../src/recipes/kept-plan.ts'
import type { PlannedEffect } from '../../src/effects.ts'
import { purgeOldEvents } from '../../src/webhooks/index.ts'
import { acquireLease } from '../../src/coordination/lease.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createHarness, makeEvent, type Harness } from '../webhooks/helpers.ts'

const DAY = 86_400_000

/**
 * What the recipes engine keeps per event, run and tick is purged past the retention window, and only what can no
 * longer matter: a recipe's queue row for an event (`recipe_event_fires`, what makes it run once per event) once
 * it is finished and its event gone; runs started before the window; ticks before it, except each recipe's newest
 * (the missed-tick catch-up reads it).
 */
describeEachDialect('recipe history retention', (dialect) => {
  let h: Harness | undefined
  afterEach(async () => {
    await h?.close()
    h = undefined
  })

  async function fire(eventId: string, status: string, firedAt: number, recipe = 'followup'): Promise<void> {
    await h!.rt.store.db.insertInto('recipe_event_fires').values({ recipe, event_id: eventId, fired_at: firedAt, status, claimed_by: null, claimed_until: null, run_id: null, last_error: null }).execute()
  }
  async function run(id: string, recipe: string, startedAt: number): Promise<void> {
    await h!.rt.store.db
      .insertInto('recipe_runs')
      .values({ id, recipe, trigger: 'cron', event_id: null, dry_run: 0, status: 'succeeded', started_at: startedAt, ended_at: startedAt + 1_000, summary: null, plan: null, error: null })
      .execute()
  }
  async function tick(recipe: string, tickAt: number): Promise<void> {
    await h!.rt.store.db.insertInto('recipe_ticks').values({ recipe, tick_at: tickAt, owner: 'test', claimed_at: tickAt }).execute()
  }
  const firesLeft = async () =>
    (await h!.rt.store.db.selectFrom('recipe_event_fires').select(['recipe', 'event_id']).orderBy('event_id').orderBy('recipe').execute()).map((r) => `${r.recipe}/${r.event_id}`)
  const runsLeft = async () => (await h!.rt.store.db.selectFrom('recipe_runs').select('id').orderBy('id').execute()).map((r) => r.id)
  const ticksLeft = async () =>
    (await h!.rt.store.db.selectFrom('recipe_ticks').select(['recipe', 'tick_at']).orderBy('recipe').orderBy('tick_at').execute()).map((r) => `${r.recipe}@${Number(r.tick_at)}`)

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
    expect(await purgeRecipeHistory(h.rt, { chunk: 3 })).toEqual({ fires: 8, runs: 0, ticks: 0, plans: 0, skipped: false })
    expect(await firesLeft()).toEqual([
      'followup/evt_gone_failed_fire',
      'followup/evt_gone_pending_fire',
      `followup/${kept.event_id}`,
      'followup/evt_recent',
    ])
    expect(await purgeRecipeHistory(h.rt)).toEqual({ fires: 0, runs: 0, ticks: 0, plans: 0, skipped: false })
  })

  it('keeps an expired event while a recipe has still to run it (its fire pending or failed), then purges it', async () => {
    h = await createHarness(dialect)
    const old = h.clock.now()
    const ids = ['evt_fire_pending', 'evt_fire_failed', 'evt_fire_done', 'evt_fire_dead', 'evt_no_fire', 'evt_other_recipe_pending']
    for (const id of ids) await h.send(makeEvent({ event_id: id }))
    await h.rt.store.db.updateTable('webhook_events').set({ status: 'processed' }).execute()
    await fire('evt_fire_pending', 'pending', old)
    await fire('evt_fire_failed', 'failed', old)
    await fire('evt_fire_done', 'done', old)
    await fire('evt_fire_dead', 'dead', old)
    // One recipe done with it, another (a recipe broken for weeks) still to run it: kept.
    await fire('evt_other_recipe_pending', 'done', old)
    await fire('evt_other_recipe_pending', 'pending', old, 'report')
    await h.clock.advance(31 * DAY)
    const eventsLeft = async () => (await h!.rt.store.db.selectFrom('webhook_events').select('event_id').orderBy('event_id').execute()).map((r) => r.event_id)

    expect(await purgeOldEvents(h.rt, { chunk: 2 })).toMatchObject({ events: 3, skipped: false })
    expect(await eventsLeft()).toEqual(['evt_fire_failed', 'evt_fire_pending', 'evt_other_recipe_pending'])
    // The recipes catch up: their events go with the next purge, and then their fires.
    await h.rt.store.db.updateTable('recipe_event_fires').set({ status: 'done' }).execute()
    expect(await purgeOldEvents(h.rt)).toMatchObject({ events: 3 })
    expect(await eventsLeft()).toEqual([])
    expect((await purgeRecipeHistory(h.rt)).fires).toBe(6)
  })

  it('purges runs and ticks past the window, every recipe (removed ones too), keeping each recipe’s newest tick', async () => {
    h = await createHarness(dialect)
    const start = h.clock.now()
    // daily: ticks every day for 40 days; its newest stays whatever its age.
    for (let d = 0; d < 40; d++) await tick('daily', start + d * DAY)
    // removed: a recipe whose file is gone; its newest tick is itself older than the window, and stays.
    for (let d = 0; d < 5; d++) await tick('removed', start + d * DAY)
    for (let d = 0; d < 7; d++) await run(`run_daily_${d}`, 'daily', start + d * DAY)
    await run('run_daily_late', 'daily', start + 39 * DAY)
    await run('run_removed_0', 'removed', start)
    await h.clock.advance(40 * DAY)
    // The window starts at day 10: days 0–9 of daily go, removed keeps day 4 only.
    expect(await purgeRecipeHistory(h.rt, { chunk: 4 })).toEqual({ fires: 0, runs: 8, ticks: 14, plans: 0, skipped: false })
    expect(await runsLeft()).toEqual(['run_daily_late'])
    expect((await ticksLeft()).filter((t) => t.startsWith('removed'))).toEqual([`removed@${start + 4 * DAY}`])
    expect((await ticksLeft()).filter((t) => t.startsWith('daily'))).toHaveLength(30)
    expect((await latestTickClaim(h.rt, 'daily'))?.tickAt).toBe(start + 39 * DAY)
    expect((await latestTickClaim(h.rt, 'removed'))?.tickAt).toBe(start + 4 * DAY)
    // Nothing left to purge: a second run deletes nothing.
    expect(await purgeRecipeHistory(h.rt)).toEqual({ fires: 0, runs: 0, ticks: 0, plans: 0, skipped: false })
  })

  it('one replica at a time (lease)', async () => {
    h = await createHarness(dialect)
    expect(await acquireLease(h.rt, 'recipes:purge', 60_000, 'other-replica')).toBe(true)
    expect(await purgeRecipeHistory(h.rt)).toEqual({ fires: 0, runs: 0, ticks: 0, plans: 0, skipped: true })
  })

  // 0.19.0 and earlier kept a run's plan whole: a nightly batch's every row, 11 MB a night, parsed whole by each reader.
  it('rewrites the plans runs recorded whole before 0.20.0 as records keep them now, once; a kept plan stays as it is', async () => {
    h = await createHarness(dialect)
    const start = h.clock.now()
    const rows = Array.from({ length: 20_000 }, (_, i) => ({ customer_phone: `+9198${String(i).padStart(8, '0')}`, note: 'é'.repeat(30) }))
    const whole: PlannedEffect[] = [{ kind: 'batch', agent_id: 101, name: 'leads', rows, rejects: [] }, ...Array.from({ length: KEPT_EFFECTS + 7 }, (_, i): PlannedEffect => ({ kind: 'call', request: { agent_id: 101, parameters: [{ name: 'customer_phone', value: `+9197${String(i).padStart(8, '0')}` }] } }))]
    const small: PlannedEffect[] = [{ kind: 'mail', to: ['ops@example.com'], subject: 'Daily report' }]
    // Within MAX_PLAN_CHARS characters but over that many bytes: a plan recorded now, with multibyte text.
    const wide: PlannedEffect[] = [{ kind: 'batch', agent_id: 101, name: 'wide', rows: Array.from({ length: KEPT_ROWS }, (_, i) => ({ customer_phone: `+9196${String(i).padStart(8, '0')}`, note: 'é'.repeat(1_500) })), rejects: [] }]
    const keptWide = encodePlan(wide)!
    expect(keptWide.length).toBeLessThanOrEqual(MAX_PLAN_CHARS)
    expect(Buffer.byteLength(keptWide)).toBeGreaterThan(MAX_PLAN_CHARS)
    for (const [id, plan] of [['run_old', JSON.stringify(whole)], ['run_small', JSON.stringify(small)], ['run_wide', keptWide]] as const) {
      await run(id, 'nightly', start)
      await h.rt.store.db.updateTable('recipe_runs').set({ plan }).where('id', '=', id).execute()
    }
    const noPause = { sleep: () => Promise.resolve() }
    expect((await purgeRecipeHistory(h.rt, noPause)).plans).toBe(1)
    const plans = new Map((await h.rt.store.db.selectFrom('recipe_runs').select(['id', 'plan']).execute()).map((r) => [r.id, r.plan!]))
    expect(plans.get('run_old')!.length).toBeLessThanOrEqual(MAX_PLAN_CHARS)
    expect(decodePlan(plans.get('run_old')!)).toEqual(decodePlan(JSON.stringify(whole)))
    expect(decodePlan(plans.get('run_old')!).omitted).toEqual({ call: 7 })
    expect(plans.get('run_small')).toBe(JSON.stringify(small))
    expect(plans.get('run_wide')).toBe(keptWide)
    expect((await purgeRecipeHistory(h.rt, noPause)).plans).toBe(0)
  })
})
