import { sql } from 'kysely'
import type { Runtime } from '../runtime.ts'
import { deleteInChunks, type DeleteInChunksOptions } from '../db/delete-in-chunks.ts'
import { inValues } from '../db/in-values.ts'
import { recipeEngineFor, type RecipeInfo } from './engine.ts'

/**
 * What an operator does with an event-triggered recipe's queue (`recipe_event_fires`) when the automatic retries are
 * not enough: run the events a recipe gave up on again once the cause is fixed (a CRM that was down longer than the
 * retries last — 2 s doubling, PROCESSING_MAX_ATTEMPTS of them, a few minutes in all), and give up on the queue of a
 * recipe that nothing runs any more — its file removed, or its `on` taken out (its events would wait for ever, hold the
 * retention purge back and keep its backlog gauge climbing). `events replay <id>` does the first for one event; these
 * do it for a recipe.
 */

/** Why a queue operation was refused; each names what to do instead. */
export type QueueRefusal = 'unknown' | 'removed' | 'broken' | 'no-events' | 'present'

/** A refused queue operation: a user's mistake (CLI exit 2; HTTP 404 for `unknown`, else 409). */
export class QueueControlError extends Error {
  override readonly name = 'QueueControlError'
  constructor(
    readonly refusal: QueueRefusal,
    message: string,
  ) {
    super(message)
  }
}

/** Why `recipes discard` marks an event dead for a recipe (`recipe_event_fires.last_error`). */
export const DISCARDED = 'discarded: nothing runs it any more (recipes discard)'

/**
 * A claim older than this is taken for one its process lost. The command may run on another host than the service
 * that set the claim, and their clocks may differ by a little: a claim is renewed every few seconds while its run
 * goes on, so one a minute past its end is no run's.
 */
const CLAIM_SKEW_MS = 60_000

export interface QueueCounts {
  /** Waiting for a run: new, or failed and due again. */
  queued: number
  /** Given up on: its retries ran out, its event was purged, or the queue was discarded. */
  dead: number
}

/** Whether `recipes retry` would take this recipe: it loads and takes events (what runs its queue). */
export function runsItsQueue(recipe: Pick<RecipeInfo, 'on' | 'broken'>): boolean {
  return recipe.broken === null && recipe.on.length > 0
}

/**
 * Whether events wait for a recipe that nothing runs any more — its file removed (`recipe` undefined), or loading and
 * taking no events now: what `recipes discard` takes. A broken recipe is not: its queue runs once it loads.
 */
export function isStranded(recipe: Pick<RecipeInfo, 'on' | 'broken'> | undefined, queue: QueueCounts): boolean {
  return queue.queued > 0 && (recipe === undefined || (recipe.broken === null && recipe.on.length === 0))
}

async function hasQueueRows(rt: Runtime, name: string): Promise<boolean> {
  return (await rt.store.db.selectFrom('recipe_event_fires').select('recipe').where('recipe', '=', name).limit(1).executeTakeFirst()) !== undefined
}

/**
 * Every recipe's queued and dead events, by recipe — also recipes whose file is gone, while rows remain. Reads the
 * (recipe, status, next_attempt_at) index: each recipe found by a skip scan, then a count per status range (rows
 * `done` are never read). Dead rows are kept as long as their event (30 days): after a long outage of what a recipe
 * calls, hundreds of thousands — ~0.3 s to count on SQLite, so requests count them in the processing thread.
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
 * Walks a recipe's queue rows in `statuses` queued within the range, each row once — in (fired_at, event_id) order,
 * which no update changes, so a row the running service turns back into one of `statuses` meanwhile (a retried event
 * that fails again) is not met a second time — and applies `update` to each chunk's rows (by id, the status and claim
 * checked again on the row itself). In short chunks, paced as the purges are: a running service's commits go between
 * them. Returns how many rows `update` changed.
 */
async function walkQueue(
  rt: Runtime,
  name: string,
  statuses: readonly string[],
  range: RetryRange & { ofStoredEvents?: boolean },
  update: (eventIds: string[], now: number) => Promise<number>,
  chunks: DeleteInChunksOptions,
): Promise<number> {
  const db = rt.store.db
  let after: { firedAt: number; eventId: string } | undefined
  let changed = 0
  await deleteInChunks(async (limit) => {
    const now = rt.clock.now()
    let chunk = db
      .selectFrom('recipe_event_fires as f')
      .select(['f.event_id', 'f.fired_at'])
      .where('f.recipe', '=', name)
      .where('f.status', 'in', statuses)
      .where('f.fired_at', '>=', range.since ?? 0)
      .where('f.fired_at', '<', range.until ?? Number.MAX_SAFE_INTEGER)
      .where((w) => w.or([w('f.claimed_by', 'is', null), w('f.claimed_until', '<', now - CLAIM_SKEW_MS)]))
    if (after) {
      const from = after
      chunk = chunk.where(({ eb, refTuple, tuple }) => eb(refTuple('f.fired_at', 'f.event_id'), '>', tuple(from.firedAt, from.eventId)))
    }
    if (range.ofStoredEvents) {
      chunk = chunk.where(({ exists, selectFrom }) => exists(selectFrom('webhook_events as e').select(sql.lit(1).as('one')).whereRef('e.event_id', '=', 'f.event_id')))
    }
    const rows = await chunk.orderBy('f.fired_at').orderBy('f.event_id').limit(limit).execute()
    const last = rows.at(-1)
    if (!last) return 0
    after = { firedAt: Number(last.fired_at), eventId: last.event_id }
    changed += await update(rows.map((r) => r.event_id), now)
    return rows.length
  }, chunks)
  return changed
}

/** The recipe named `name` as the service would load it now, if its file is there. */
async function findRecipe(rt: Runtime, name: string): Promise<RecipeInfo | undefined> {
  return (await recipeEngineFor(rt).list()).find((r) => r.name === name)
}

/**
 * Queues again every event `name` gave up on (`dead`) or is waiting to retry (`failed`), queued for it in the range:
 * back to `pending` with their attempts reset and due at once, so the running service runs them in batches within a
 * second (its sweep), each event still once. Rows a run holds right now are left to it, and so are those whose event
 * was purged (nothing left to run). Refused for a recipe that nothing would run them with: removed, broken (fix it
 * first), or no longer taking events. Returns how many were queued again.
 */
export async function retryRecipeEvents(rt: Runtime, name: string, range: RetryRange = {}, chunks: DeleteInChunksOptions = {}): Promise<number> {
  const recipe = await findRecipe(rt, name)
  const dir = rt.config.recipes.dir
  if (!recipe) {
    if (!(await hasQueueRows(rt, name))) throw new QueueControlError('unknown', `no recipe named "${name}" in ${dir} (see: recipes list)`)
    throw new QueueControlError('removed', `recipe "${name}" is no longer in ${dir}: nothing would run its events (put the file back first, or give them up: recipes discard ${name})`)
  }
  if (recipe.broken) throw new QueueControlError('broken', `recipe "${name}" does not load: fix it first, then retry (${recipe.broken})`)
  if (recipe.on.length === 0) {
    // Discarding is the way out only for a queue there is: `recipes discard` refuses a recipe nothing was queued for.
    if (!(await hasQueueRows(rt, name))) {
      throw new QueueControlError('no-events', `recipe "${name}" takes no events (its definition has no "on"): nothing was ever queued for it, so there is nothing to retry`)
    }
    throw new QueueControlError('no-events', `recipe "${name}" takes no events (its definition has no "on"): nothing would run its queue (give it up: recipes discard ${name})`)
  }
  const db = rt.store.db
  return walkQueue(rt, name, ['dead', 'failed'], { ...range, ofStoredEvents: true }, async (eventIds, now) => {
    const result = await db
      .updateTable('recipe_event_fires')
      // Due at the time it was first queued: already due on any replica's clock (the command may run on another host,
      // its clock ahead), and in the queue's order — oldest first, as they would have run.
      .set((eb) => ({ status: 'pending', attempts: 0, next_attempt_at: eb.ref('fired_at'), claimed_by: null, claimed_until: null, last_error: null }))
      .where('recipe', '=', name)
      .where(inValues(rt.store.dialect, 'event_id', eventIds))
      .where('status', 'in', ['dead', 'failed'])
      .where((w) => w.or([w('claimed_by', 'is', null), w('claimed_until', '<', now - CLAIM_SKEW_MS)]))
      .executeTakeFirst()
    return Number(result.numUpdatedRows)
  }, chunks)
}

/**
 * Gives up on the events still queued for a recipe that nothing runs any more — its file removed from RECIPES_DIR,
 * or its `on` taken out: its `pending` and `failed` rows become `dead` (last error DISCARDED), so they stop holding
 * the retention purge back and leave its backlog gauges, and the record stays (the purge removes it with its event;
 * `recipes retry` runs them if the recipe takes events again). Refused while the recipe takes events, or does not
 * load (what it takes is unknown). Rows a process still running the recipe holds are left to it. Returns how many
 * were given up.
 */
export async function discardRecipeQueue(rt: Runtime, name: string, chunks: DeleteInChunksOptions = {}): Promise<number> {
  const recipe = await findRecipe(rt, name)
  const dir = rt.config.recipes.dir
  if (recipe?.broken) throw new QueueControlError('broken', `recipe "${name}" does not load: fix it (its queue runs once it does) or remove its file, then discard (${recipe.broken})`)
  if (recipe && recipe.on.length > 0) {
    throw new QueueControlError('present', `recipe "${name}" in ${dir} takes events (on: ${recipe.on.join(', ')}): its queue is live — remove the file (or its "on") first`)
  }
  if (!(await hasQueueRows(rt, name))) throw new QueueControlError('unknown', `nothing was ever queued for a recipe named "${name}" (see: recipes list)`)
  const db = rt.store.db
  return walkQueue(rt, name, ['pending', 'failed'], {}, async (eventIds, now) => {
    const result = await db
      .updateTable('recipe_event_fires')
      .set({ status: 'dead', claimed_by: null, claimed_until: null, last_error: DISCARDED })
      .where('recipe', '=', name)
      .where(inValues(rt.store.dialect, 'event_id', eventIds))
      .where('status', 'in', ['pending', 'failed'])
      .where((w) => w.or([w('claimed_by', 'is', null), w('claimed_until', '<', now - CLAIM_SKEW_MS)]))
      .executeTakeFirst()
    return Number(result.numUpdatedRows)
  }, chunks)
}
