import { basename } from 'node:path'
import { sql } from 'kysely'
import type { Runtime } from '../runtime.ts'
import { deleteInChunks } from '../db/delete-in-chunks.ts'
import { listRecipeFiles } from './loader.ts'

/**
 * What an operator does with an event-triggered recipe's queue (`recipe_event_fires`) when the automatic retries are
 * not enough: run the events a recipe gave up on again once the cause is fixed (a CRM that was down longer than the
 * retries last — 2 s doubling, PROCESSING_MAX_ATTEMPTS of them, a few minutes in all), and give up on the queue of a
 * recipe whose file is gone (nothing runs it: its events would wait for ever, hold the retention purge back and keep
 * its backlog gauge climbing). `events replay <id>` does the first for one event; these do it for a recipe.
 */

/** No recipe file of this name and nothing ever queued for one. */
export class UnknownRecipeQueueError extends Error {
  override readonly name = 'UnknownRecipeQueueError'
}

/** Retrying events for a recipe whose file is gone: nothing would run them. */
export class RecipeRemovedError extends Error {
  override readonly name = 'RecipeRemovedError'
}

/** Discarding the queue of a recipe whose file is still in RECIPES_DIR: its events are live. */
export class RecipeStillPresentError extends Error {
  override readonly name = 'RecipeStillPresentError'
}

/** Why `recipes discard` marks an event dead for a recipe (`recipe_event_fires.last_error`). */
export const DISCARDED = 'discarded: the recipe was removed (recipes discard)'

export interface QueueCounts {
  /** Waiting for a run: new, or failed and due again. */
  queued: number
  /** Given up on: its retries ran out, its event was purged, or the queue was discarded. */
  dead: number
}

function recipeFileExists(rt: Runtime, name: string): boolean {
  return listRecipeFiles(rt.config.recipes.dir).some((file) => basename(file, '.ts') === name)
}

async function hasQueueRows(rt: Runtime, name: string): Promise<boolean> {
  return (await rt.store.db.selectFrom('recipe_event_fires').select('recipe').where('recipe', '=', name).limit(1).executeTakeFirst()) !== undefined
}

/**
 * Every recipe's queued and dead events, by recipe — also recipes whose file is gone, while rows remain. Reads the
 * (recipe, status, next_attempt_at) index: each recipe found by a skip scan, then a count per status range.
 */
export async function recipeQueueCounts(rt: Runtime): Promise<Map<string, QueueCounts>> {
  const { rows } = await sql<{ recipe: string; status: string; n: number | string }>`
    with recursive recipes(recipe) as (
      select min(recipe) from recipe_event_fires
      union all
      select (select min(f.recipe) from recipe_event_fires f where f.recipe > recipes.recipe) from recipes where recipes.recipe is not null
    )
    select r.recipe as recipe, f.status as status, count(*) as n
    from recipes r
    join recipe_event_fires f on f.recipe = r.recipe and f.status in ('pending', 'failed', 'dead')
    where r.recipe is not null
    group by r.recipe, f.status`.execute(rt.store.db)
  const counts = new Map<string, QueueCounts>()
  for (const row of rows) {
    const c = counts.get(row.recipe) ?? { queued: 0, dead: 0 }
    if (row.status === 'dead') c.dead += Number(row.n)
    else c.queued += Number(row.n)
    counts.set(row.recipe, c)
  }
  return counts
}

export interface RetryRange {
  /** Events queued for the recipe at or after this time (epoch ms; default: any). */
  since?: number
  /** And before this time (default: no end). */
  until?: number
}

/**
 * Queues again every event `name` gave up on (`dead`) or is waiting to retry (`failed`), queued for it in the range:
 * back to `pending` with their attempts reset, due at once, so the running service runs them in batches within a second
 * (its sweep), each event still once. Rows a run holds right now are left to it, and so are those whose event was
 * purged (nothing left to run). In short chunks, paced as the purges are (a running service's commits go between).
 * Returns how many were queued again.
 */
export async function retryRecipeEvents(rt: Runtime, name: string, range: RetryRange = {}): Promise<number> {
  if (!recipeFileExists(rt, name)) {
    if (!(await hasQueueRows(rt, name))) throw new UnknownRecipeQueueError(`no recipe named "${name}" in ${rt.config.recipes.dir} (see: recipes list)`)
    throw new RecipeRemovedError(`recipe "${name}" is no longer in ${rt.config.recipes.dir}: nothing would run its events (put the file back first, or give them up: recipes discard ${name})`)
  }
  const since = range.since ?? 0
  const until = range.until ?? Number.MAX_SAFE_INTEGER
  const db = rt.store.db
  const { rows } = await deleteInChunks(async (limit) => {
    const now = rt.clock.now()
    const result = await db
      .updateTable('recipe_event_fires')
      // Due at the time it was first queued: already due on any replica's clock (the command may run on another host,
      // its clock ahead), and in the queue's order — oldest first, as they would have run.
      .set((eb) => ({ status: 'pending', attempts: 0, next_attempt_at: eb.ref('fired_at'), claimed_by: null, claimed_until: null, last_error: null }))
      .where('recipe', '=', name)
      // Again on the row itself: on Postgres a row a run claimed meanwhile is re-checked against these, not the subquery.
      .where('status', 'in', ['dead', 'failed'])
      .where((w) => w.or([w('claimed_until', 'is', null), w('claimed_until', '<', now)]))
      .where('event_id', 'in', (eb) =>
        eb
          .selectFrom('recipe_event_fires as f')
          .select('f.event_id')
          .where('f.recipe', '=', name)
          .where('f.status', 'in', ['dead', 'failed'])
          .where('f.fired_at', '>=', since)
          .where('f.fired_at', '<', until)
          .where((w) => w.or([w('f.claimed_until', 'is', null), w('f.claimed_until', '<', now)]))
          .where(({ exists, selectFrom }) => exists(selectFrom('webhook_events as e').select(sql.lit(1).as('one')).whereRef('e.event_id', '=', 'f.event_id')))
          .limit(limit),
      )
      .executeTakeFirst()
    return Number(result.numUpdatedRows)
  })
  return rows
}

/**
 * Gives up on the events still queued for a recipe whose file was removed from RECIPES_DIR: its `pending` and `failed`
 * rows become `dead` (last error DISCARDED), so they stop holding the retention purge back and leave its backlog
 * gauges, and the record stays (the purge removes it with its event; `recipes retry` runs them if the file comes
 * back). Refused while the file is there. Rows a process still running the recipe holds are left to it. Returns how
 * many were given up.
 */
export async function discardRecipeQueue(rt: Runtime, name: string): Promise<number> {
  if (recipeFileExists(rt, name)) {
    throw new RecipeStillPresentError(`recipe "${name}" is in ${rt.config.recipes.dir}: remove its file first (a recipe that is there runs its queue; to stop one that fails, fix it, or let its events go dead)`)
  }
  if (!(await hasQueueRows(rt, name))) throw new UnknownRecipeQueueError(`nothing was ever queued for a recipe named "${name}" (see: recipes list)`)
  const db = rt.store.db
  const { rows } = await deleteInChunks(async (limit) => {
    const now = rt.clock.now()
    const result = await db
      .updateTable('recipe_event_fires')
      .set({ status: 'dead', claimed_by: null, claimed_until: null, last_error: DISCARDED })
      .where('recipe', '=', name)
      .where('status', 'in', ['pending', 'failed'])
      .where((w) => w.or([w('claimed_until', 'is', null), w('claimed_until', '<', now)]))
      .where('event_id', 'in', (eb) =>
        eb
          .selectFrom('recipe_event_fires as f')
          .select('f.event_id')
          .where('f.recipe', '=', name)
          .where('f.status', 'in', ['pending', 'failed'])
          .where((w) => w.or([w('f.claimed_until', 'is', null), w('f.claimed_until', '<', now)]))
          .limit(limit),
      )
      .executeTakeFirst()
    return Number(result.numUpdatedRows)
  })
  return rows
}
