import { sql, type Kysely, type Selectable } from 'kysely'
import type { Database, RecipeEventFiresTable } from '../db/schema.ts'
import type { Runtime } from '../runtime.ts'
import { chunks } from '../utils/chunks.ts'
import { inValues } from '../db/in-values.ts'
import { insertRows } from '../db/insert-rows.ts'
import { leadingKeys } from '../db/leading-keys.ts'
import { inClaimSubquery } from '../db/in-claim-subquery.ts'
import { RUN_STALE_MS } from './overlap.ts'

/**
 * Claims that make scheduled ticks and event triggers run once across replicas: the first to insert the
 * primary key runs, everyone else sees 0 rows inserted and stands down.
 */
export async function claimTick(rt: Runtime, recipe: string, tickAt: number): Promise<boolean> {
  const result = await rt.store.db
    .insertInto('recipe_ticks')
    .values({ recipe, tick_at: tickAt, owner: rt.instanceId, claimed_at: rt.clock.now() })
    .onConflict((oc) => oc.columns(['recipe', 'tick_at']).doNothing())
    .executeTakeFirst()
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0
}

/** A recipe's newest tick claim: which tick, who claimed it and when (on the claimer's clock). */
export interface TickClaim {
  tickAt: number
  owner: string
  claimedAt: number
}

/** The newest tick anyone claimed for this recipe, if any (the lost-tick sweep; retention keeps its run). */
export async function latestTickClaim(rt: Runtime, recipe: string): Promise<TickClaim | undefined> {
  const row = await rt.store.db
    .selectFrom('recipe_ticks')
    .select(['tick_at', 'owner', 'claimed_at'])
    .where('recipe', '=', recipe)
    .orderBy('tick_at', 'desc')
    .limit(1)
    .executeTakeFirst()
  return row ? { tickAt: Number(row.tick_at), owner: row.owner, claimedAt: Number(row.claimed_at) } : undefined
}

/**
 * Whether a scheduled run (or its skip) of the recipe was recorded at or after `since`: a claimed tick's run is
 * written by its claimer moments after the claim, on the same clock.
 */
export async function tickRanSince(rt: Runtime, recipe: string, since: number): Promise<boolean> {
  const row = await rt.store.db
    .selectFrom('recipe_runs')
    .select('id')
    .where('recipe', '=', recipe)
    .where('started_at', '>=', since)
    .where('dry_run', '=', 0)
    .where('trigger', 'in', ['cron', 'catchup'])
    .limit(1)
    .executeTakeFirst()
  return row !== undefined
}

/**
 * Takes over a claim whose run was never recorded (its process died, or its database went away, between the two):
 * only if nobody changed the claim since it was read, so of several replicas finding it one takes it.
 */
export async function reclaimTick(rt: Runtime, recipe: string, claim: TickClaim): Promise<boolean> {
  const result = await rt.store.db
    .updateTable('recipe_ticks')
    .set({ owner: rt.instanceId, claimed_at: rt.clock.now() })
    .where('recipe', '=', recipe)
    .where('tick_at', '=', claim.tickAt)
    .where('owner', '=', claim.owner)
    .where('claimed_at', '=', claim.claimedAt)
    .executeTakeFirst()
  return Number(result.numUpdatedRows) === 1
}

/**
 * The recipes with rows in the event queue, each found by one probe of its primary key (recipe, event_id): an event's
 * rows are then looked up by that key, recipe by recipe. The queue has no index of its own on event_id (each would be a
 * random-keyed entry written per event processed); without the recipes, a lookup by event read the whole queue — a
 * month of events for every recipe subscribed to them.
 */
export function queuedRecipes(rt: Runtime): Promise<string[]> {
  return leadingKeys(rt.store.db, 'recipe_event_fires', 'recipe')
}

/** One recipe's part in an event: when it was queued for it, and how that stands (ran, waiting for a retry, gave up). */
export interface EventFire {
  recipe: string
  firedAt: number
  status: string
  attempts: number
  runId: string | null
  error: string | null
}

/**
 * Which recipes an event triggered, when, and how each stands (the dashboard's event detail, `events show`). Read
 * through the queue's (recipe, event_id) key a recipe at a time: by the event id alone it read every row kept.
 */
export async function firesForEvent(rt: Runtime, eventId: string): Promise<EventFire[]> {
  const recipes = await queuedRecipes(rt)
  if (recipes.length === 0) return []
  const rows = await rt.store.db
    .selectFrom('recipe_event_fires')
    .select(['recipe', 'fired_at', 'status', 'attempts', 'run_id', 'last_error'])
    .where('recipe', 'in', recipes)
    .where('event_id', '=', eventId)
    .orderBy('recipe')
    .execute()
  return rows.map((r) => ({ recipe: r.recipe, firedAt: Number(r.fired_at), status: r.status, attempts: r.attempts, runId: r.run_id, error: r.last_error }))
}

/** A recipe's queued event (a `recipe_event_fires` row). */
export type FireRow = Selectable<RecipeEventFiresTable>

/** Rows per insert (six values each): well under SQLite's bound-variable limit. */
const ENQUEUE_CHUNK = 256
/** The columns a queued fire is written with. */
const FIRE_COLUMNS = ['recipe', 'event_id', 'fired_at', 'status', 'attempts', 'next_attempt_at'] as const

/**
 * Queues events for recipes: one row per (recipe, event), so an event queued before — redelivered,
 * replayed, or processed by another replica — is never queued again. Returns the pairs that were new.
 */
export async function enqueueEventFires(rt: Runtime, fires: Array<{ recipe: string; eventId: string }>): Promise<Array<{ recipe: string; eventId: string }>> {
  const now = rt.clock.now()
  const insert = async (db: Kysely<Database>) => {
    const fresh: Array<{ recipe: string; eventId: string }> = []
    for (const chunk of chunks(fires, ENQUEUE_CHUNK)) {
      const inserted = await insertRows(
        db,
        rt.store.dialect,
        'recipe_event_fires',
        FIRE_COLUMNS,
        chunk.map((f) => ({ recipe: f.recipe, event_id: f.eventId, fired_at: now, status: 'pending', attempts: 0, next_attempt_at: now })),
        { onConflict: { columns: ['recipe', 'event_id'] }, returning: ['recipe', 'event_id'] },
      )
      for (const r of inserted) fresh.push({ recipe: r.recipe, eventId: r.event_id })
    }
    return fresh
  }
  // A batch's fires in one commit, not one per chunk (on SQLite each commit writes the pages it touched again).
  return fires.length <= ENQUEUE_CHUNK ? insert(rt.store.db) : rt.store.db.transaction().execute(insert)
}

/**
 * A replayed event runs again for every recipe that gave up on it or is waiting to retry it: its `dead` and
 * `failed` queue rows go back to `pending` with their attempts reset, due now. Rows `done` stay done (a recipe
 * runs once per event), and a row a run holds right now is left to that run. Without this a replay marked the event
 * processed while the recipe's row stayed dead (the insert that queues an event for a recipe keeps an existing row),
 * so the follow-up a failed run never planned was never planned. Returns how many rows were revived.
 */
export async function reviveEventFires(rt: Runtime, eventId: string): Promise<number> {
  const recipes = await queuedRecipes(rt)
  if (recipes.length === 0) return 0
  const now = rt.clock.now()
  const result = await rt.store.db
    .updateTable('recipe_event_fires')
    .set({ status: 'pending', attempts: 0, next_attempt_at: now, claimed_by: null, claimed_until: null, last_error: null })
    .where('recipe', 'in', recipes)
    .where('event_id', '=', eventId)
    .where('status', 'in', ['dead', 'failed'])
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
    .executeTakeFirst()
  return Number(result.numUpdatedRows)
}

/**
 * How the error of events whose run was interrupted by the processing thread (or process) stopping starts
 * (src/instances.ts writes it). Such events are retried with no other batch running beside them (src/recipes/event-dispatch.ts).
 */
export const INTERRUPTED_ERROR_PREFIX = 'interrupted:'

/**
 * The arms of a claim, in order: events whose first run was interrupted — together, as their batch was (below); a
 * retry that fell due, alone; new events.
 */
const CLAIM_ARMS = [
  { status: 'failed', interruptedOnce: true },
  { status: 'failed', interruptedOnce: false },
  { status: 'pending', interruptedOnce: false },
] as const

/**
 * Claims a batch of a recipe's queued events for `owner`, oldest first. A retry that fell due is claimed
 * alone, before new events: a batch that failed is retried event by event, so one bad event cannot keep
 * failing the rest. Atomic like the inbox's claims (FOR UPDATE SKIP LOCKED on Postgres).
 *
 * Events whose first run was interrupted (attempts 1, `interrupted: …`) come back together, up to `limit`: every run in
 * progress when the thread stopped was interrupted, most of them for a fault not theirs, and their retry runs with no
 * other recipe beside it — one event a run, a recipe's interrupted batch of hundreds took a retry each, and each waited
 * for the runs in progress (a hung recipe's, up to RECIPE_TIMEOUT_SECONDS): hours before its new events had a turn.
 * A batch interrupted again alone is the looping recipe's: its events are then at attempts 2, retried one by one.
 *
 * A queued event is `pending` until its first run and `failed` (attempts ≥ 1) while it waits for a retry,
 * so each arm reads one status in the order of the (recipe, status, next_attempt_at) index and stops at
 * its limit — it never reads or sorts the rest of the queue.
 */
export async function claimFireBatch(rt: Runtime, recipe: string, owner: string, limit: number, claimMs: number): Promise<FireRow[]> {
  const now = rt.clock.now()
  const db = rt.store.db
  const isPg = rt.store.dialect === 'postgres'
  for (const { status, interruptedOnce } of CLAIM_ARMS) {
    let due = db
      .selectFrom('recipe_event_fires')
      .select('event_id')
      .where('recipe', '=', recipe)
      .where('status', '=', status)
      .where('next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
      .orderBy('next_attempt_at')
      .limit(status === 'failed' && !interruptedOnce ? 1 : limit)
    if (interruptedOnce) due = due.where('attempts', '=', 1).where('last_error', 'like', `${INTERRUPTED_ERROR_PREFIX}%`)
    if (isPg) due = due.forUpdate().skipLocked()
    // SQLite: look before writing. An UPDATE takes the database's one write lock even when it matches
    // nothing, and the `failed` arm almost always does — a lock wait against the receiver's commits, per claim.
    else if (!(await due.limit(1).executeTakeFirst())) continue
    const rows = await db
      .updateTable('recipe_event_fires')
      .set({ claimed_by: owner, claimed_until: now + claimMs })
      .where('recipe', '=', recipe)
      .where(inClaimSubquery(rt.store.dialect, 'event_id', due))
      // Through an expression no index serves, so each id is found by the primary key (with `status = ?`
      // SQLite walked the status index over the recipe's whole queue, testing each row against the list).
      .where((eb) => eb.fn.coalesce('status', sql.lit('')), '=', status)
      .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
      // Not while a real run of the recipe is going (its running slot taken: migration 0018's partial unique index
      // answers this). The caller looked before claiming, but a run can start between that look and this write;
      // a batch claimed then would only wait for its turn, holding its events (src/recipes/engine.ts).
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('recipe_runs')
              .select(sql.lit(1).as('one'))
              .where('recipe', '=', recipe)
              // The recipe's one running slot, through its partial unique index: literals, which a planner matches
              // against the index's own terms (parameters it cannot), and the age test kept off the (recipe,
              // started_at) index with a unary plus — else SQLite walked that one over every run of the last hour.
              .where('status', '=', sql.lit('running'))
              .where('dry_run', '=', sql.lit(0))
              .where(sql<boolean>`+${sql.ref('started_at')} > ${now - RUN_STALE_MS}`),
          ),
        ),
      )
      .returningAll()
      .execute()
    if (rows.length > 0) return rows.sort((a, b) => a.fired_at - b.fired_at || (a.event_id < b.event_id ? -1 : 1))
  }
  return []
}

/** Extends this owner's claim on a batch whose run is still going; resolves with how many fires it still holds. */
export async function renewFireClaims(rt: Runtime, recipe: string, owner: string, claimMs: number): Promise<number> {
  const result = await rt.store.db
    .updateTable('recipe_event_fires')
    .set({ claimed_until: rt.clock.now() + claimMs })
    .where('recipe', '=', recipe)
    .where('claimed_by', '=', owner)
    .where('status', 'in', ['pending', 'failed'])
    .executeTakeFirst()
  return Number(result.numUpdatedRows)
}

export type FireOutcome =
  | { status: 'done'; runId: string }
  | { status: 'failed'; runId: string | null; error: string; nextAttemptAt: number }
  | { status: 'dead'; runId: string | null; error: string }

/** Records how a claimed batch ended, guarded by the claim (a run whose claim lapsed cannot overwrite). */
export async function finishFires(rt: Runtime, recipe: string, owner: string, eventIds: string[], outcome: FireOutcome): Promise<void> {
  if (eventIds.length === 0) return
  // One statement (and one commit) for the whole batch: the ids go as one parameter.
  await rt.store.db
    .updateTable('recipe_event_fires')
    .set((eb) => ({
      status: outcome.status,
      attempts: outcome.status === 'done' ? eb.ref('attempts') : eb('attempts', '+', 1),
      next_attempt_at: outcome.status === 'failed' ? outcome.nextAttemptAt : eb.ref('next_attempt_at'),
      run_id: outcome.runId,
      last_error: outcome.status === 'done' ? null : outcome.error,
      claimed_by: null,
      claimed_until: null,
    }))
    .where('recipe', '=', recipe)
    .where(inValues(rt.store.dialect, 'event_id', eventIds))
    .where('claimed_by', '=', owner)
    .execute()
}

/** Hands claimed events back to the queue untouched (status, attempts and due time as they were). */
export async function releaseFires(rt: Runtime, recipe: string, owner: string, eventIds: string[]): Promise<void> {
  if (eventIds.length === 0) return
  // One statement for the whole batch, as finishFires: the ids go as one parameter.
  await rt.store.db
    .updateTable('recipe_event_fires')
    .set({ claimed_by: null, claimed_until: null })
    .where('recipe', '=', recipe)
    .where(inValues(rt.store.dialect, 'event_id', eventIds))
    .where('claimed_by', '=', owner)
    .execute()
}

/**
 * Queued events not yet run, per recipe (metrics, readiness). The queue keeps every fire as long as its event (30
 * days by default), so the grouped count reads only the pending ones: the recipes are found one index seek each
 * (a loose scan: the next name after the last), then each recipe's pending and failed fires through the
 * (recipe, status, …) index. Grouping the whole table instead read every fire ever kept on each scrape — 130 ms
 * for 500,000 on SQLite, on the processing thread. Portable SQL (a recursive CTE): SQLite and Postgres alike.
 */
export async function pendingFires(rt: Runtime): Promise<Array<{ recipe: string; n: number; oldest: number | null }>> {
  const { rows } = await sql<{ recipe: string; n: number | string; oldest: number | string | null }>`
    with recursive recipes(recipe) as (
      select min(recipe) from recipe_event_fires
      union all
      select (select min(f.recipe) from recipe_event_fires f where f.recipe > recipes.recipe) from recipes where recipes.recipe is not null
    )
    select r.recipe as recipe, count(*) as n, min(f.fired_at) as oldest
    from recipes r
    join recipe_event_fires f on f.recipe = r.recipe and f.status in ('pending', 'failed')
    where r.recipe is not null
    group by r.recipe`.execute(rt.store.db)
  return rows.map((r) => ({ recipe: r.recipe, n: Number(r.n), oldest: r.oldest === null ? null : Number(r.oldest) }))
}
