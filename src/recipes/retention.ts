import { sql } from 'kysely'
import type { Runtime } from '../runtime.ts'
import { deleteInChunks, type ChunkedDeletion, type DeleteInChunksOptions } from '../db/delete-in-chunks.ts'
import { decodePlan, encodePlan, MAX_PLAN_CHARS } from './kept-plan.ts'
import { leadingKeys } from '../db/leading-keys.ts'
import { runRetentionPurge } from '../coordination/retention-run.ts'
import { latestTickClaim } from './claims.ts'

export interface RecipeHistoryPurgeResult {
  /** Event-triggered recipes' queue rows (`recipe_event_fires`). */
  fires: number
  /** Recorded runs (`recipe_runs`). */
  runs: number
  /** Claimed schedule ticks (`recipe_ticks`). */
  ticks: number
  /** Runs recorded before 0.20.0 whose whole plans were rewritten cut (`recutOldPlans`). */
  plans: number
  skipped: boolean
}

/**
 * Purges what the recipes engine keeps per event, run and tick once it can no longer matter, past the retention
 * window (EVENT_RETENTION_DAYS, ≥ 30 days). Without it each of these tables grew for ever:
 * - queue rows of event-triggered recipes (`recipe_event_fires`): run or dead-lettered, and their event itself
 *   purged. While its event is kept a fire is what makes the recipe run once per event (a redelivered or replayed
 *   event finds it and does not fire again), so it stays exactly as long as the event does;
 * - recorded runs (`recipe_runs`, what `recipes runs` and the dashboard list) started before the window;
 * - claimed schedule ticks (`recipe_ticks`) before the window, except each recipe's newest: the missed-tick
 *   catch-up at start-up reads it.
 * One replica at a time (a lease); in chunks (src/db/delete-in-chunks.ts), runs and ticks a recipe at a time
 * through their (recipe, …) indexes. It also rewrites the whole plans runs recorded before 0.20.0 (recutOldPlans).
 */
export function purgeRecipeHistory(rt: Runtime, options: DeleteInChunksOptions = {}): Promise<RecipeHistoryPurgeResult> {
  return runRetentionPurge(rt, 'recipes', 'recipe history', { fires: 0, runs: 0, ticks: 0, plans: 0 }, options, async ({ cutoff, chunks, counted }) => {
    const db = rt.store.db
    const fires = counted(
      await deleteInChunks(async (limit) => {
        const deleted = await db
          .deleteFrom('recipe_event_fires')
          .where(({ eb, refTuple, selectFrom }) =>
            eb(
              refTuple('recipe', 'event_id'),
              'in',
              selectFrom('recipe_event_fires as f')
                .select(['f.recipe', 'f.event_id'])
                .where('f.fired_at', '<', cutoff)
                .where('f.status', 'in', ['done', 'dead'])
                .where(({ not, exists, selectFrom: inner }) => not(exists(inner('webhook_events as e').select(sql.lit(1).as('one')).whereRef('e.event_id', '=', 'f.event_id'))))
                .limit(limit)
                .$asTuple('recipe', 'event_id'),
            ),
          )
          .executeTakeFirst()
        return Number(deleted.numDeletedRows)
      }, chunks),
    )
    /** Deletes through `deleteChunk`, a recipe at a time — recipes whose files are gone included. */
    const perRecipe = async (table: 'recipe_runs' | 'recipe_ticks', deleteChunk: (recipe: string, limit: number) => Promise<bigint>) => {
      let rows = 0
      for (const recipe of await leadingKeys(db, table, 'recipe')) rows += counted(await deleteInChunks(async (limit) => Number(await deleteChunk(recipe, limit)), chunks))
      return rows
    }
    const runs = await perRecipe('recipe_runs', async (recipe, limit) => {
      const deleted = await db
        .deleteFrom('recipe_runs')
        .where('id', 'in', db.selectFrom('recipe_runs').select('id').where('recipe', '=', recipe).where('started_at', '<', cutoff).limit(limit))
        .executeTakeFirst()
      return deleted.numDeletedRows
    })
    const ticks = await perRecipe('recipe_ticks', async (recipe, limit) => {
      const keepFrom = Math.min(cutoff, (await latestTickClaim(rt, recipe))?.tickAt ?? cutoff)
      const deleted = await db
        .deleteFrom('recipe_ticks')
        .where('recipe', '=', recipe)
        .where('tick_at', 'in', db.selectFrom('recipe_ticks').select('tick_at').where('recipe', '=', recipe).where('tick_at', '<', keepFrom).limit(limit))
        .executeTakeFirst()
      return deleted.numDeletedRows
    })
    const plans = counted(await recutOldPlans(rt, chunks))
    // Rewritten, not purged: no table's purged rows.
    return { counts: { fires, runs, ticks, plans }, tables: { recipe_event_fires: fires, recipe_runs: runs, recipe_ticks: ticks } }
  })
}

/**
 * Runs recorded by 0.19.0 and earlier kept their plans whole — a nightly batch's every row, 11 MB a night — and every
 * reader cuts them as it reads (src/recipes/kept-plan.ts), after parsing them whole. Each is rewritten as a record
 * keeps a plan now, one at a time and paced like a purge's chunks, found by the size of the column (its length in
 * bytes, which neither database reads the value for). A plan within MAX_PLAN_CHARS characters but over that many bytes
 * (written now, with multibyte text) is read and left as it is. A pass that finds none left is noted, and later runs
 * skip the scan (a replica of 0.19.0 still running after it, in a rolling deploy, writes plans cut as they are read).
 */
async function recutOldPlans(rt: Runtime, options: DeleteInChunksOptions): Promise<ChunkedDeletion> {
  const db = rt.store.db
  // Once a pass has found none left, later runs skip the scan: it reads every run's row (100,000 a month, and more).
  const noted = await db.selectFrom('kv_state').select('value').where('namespace', '=', MAINTENANCE).where('key', '=', PLANS_RECUT).executeTakeFirst()
  if (noted) return { rows: 0, more: false }
  let after = ''
  let rewritten = 0
  const done = await deleteInChunks(async () => {
    const row = await db
      .selectFrom('recipe_runs')
      .select(['id', 'plan'])
      .where(sql<number>`octet_length(plan)`, '>', MAX_PLAN_CHARS)
      .where('id', '>', after)
      .orderBy('id')
      .limit(1)
      .executeTakeFirst()
    if (!row) return 0
    after = row.id
    const kept = decodePlan(row.plan)
    const text = encodePlan(kept.effects, kept.omitted)
    if (text !== row.plan) {
      // A finished run's plan is written once, at its end; the purge's lease keeps other replicas off this one.
      await db.updateTable('recipe_runs').set({ plan: text }).where('id', '=', row.id).execute()
      rewritten++
    }
    return 1
  }, { ...options, chunk: 1 })
  if (!done.more) {
    const now = rt.clock.now()
    await db.insertInto('kv_state').values({ namespace: MAINTENANCE, key: PLANS_RECUT, value: JSON.stringify(now), updated_at: now }).onConflict((oc) => oc.doNothing()).execute()
  }
  return { ...done, rows: rewritten }
}

/** Where the purge notes a pass of recutOldPlans that found nothing left to rewrite (kv_state). */
const MAINTENANCE = 'switchboard:maintenance'
const PLANS_RECUT = 'recipe_plans_recut'
