import { inspect } from 'node:util'
import { dryRunClient } from './dry-run-client.ts'
import { recipeClient } from '../upstream/client.ts'
import type { Selectable, SelectQueryBuilder } from 'kysely'
import type { Database, RecipeRunsTable } from '../db/schema.ts'
import type { Runtime } from '../runtime.ts'
import type { Effects, PlannedEffect } from '../effects.ts'
import type { PipelineEvent } from '../events/hooks.ts'
import type { RecipeContext, RecipeDefinition, RecipeTrigger, RecipeTriggerType } from './define.ts'
import { recipeMetrics } from './metrics.ts'
import { createBindings } from './bindings.ts'
import { recipeFrame } from './recipe-frame.ts'
import { openWhileRunning, runClock } from './open-while-running.ts'
import { createQueries } from './queries.ts'
import { createKvState, recipeStateNamespace } from './state.ts'
import { decodeSummary, encodeSummary, storableSummary } from './summary.ts'
import { decodePlan, encodePlan, type PlanOmitted } from './kept-plan.ts'
import { timeOrderedId } from '../utils/time-ordered-id.ts'
import { ABANDONED_RUN_ERROR, closeAbandonedRun, runOwner, takeRunSlot } from './overlap.ts'
import { isProcessAlive } from '../utils/process-identity.ts'
import { keepClosing } from './keep-closing.ts'
import { leadingKeys } from '../db/leading-keys.ts'
import { accessProblem } from '../utils/access-problem.ts'
import { writeAgain } from '../utils/write-again.ts'
import { isMomentaryError } from '../db/momentary-error.ts'

/**
 * A run's outcome the database refuses for a moment is written again this often, this many times — as its batch's
 * outcome is (src/recipes/event-dispatch.ts), well within the claims on its events.
 */
const RECORD_RETRY_MS = 1_000
const RECORD_TRIES = 5

export type RunStatus = 'running' | 'succeeded' | 'failed' | 'skipped'

/** One recorded run (a recipe_runs row, JSON parsed), as the CLI and /admin/recipes show it. */
export interface RecipeRun {
  id: string
  recipe: string
  trigger: RecipeTriggerType
  eventId: string | null
  dryRun: boolean
  status: RunStatus
  startedAt: number
  endedAt: number | null
  /** What `run` returned (a JSON value), or why the run was skipped; null when nothing. */
  summary: unknown
  /**
   * The run's side effects: whole as the engine returns the run just made (`recipes run --json` prints that), as its
   * record keeps them (src/recipes/kept-plan.ts) when read back or asked for over HTTP (run-now.ts).
   */
  plan: PlannedEffect[]
  /** The effects of each kind the record left out of `plan` (none for the run just made). */
  planOmitted: PlanOmitted
  error: string | null
  /** What `run` returned, unserialized (only on the run that just happened). */
  result?: unknown
}

/**
 * The most characters of an error's message a run keeps (the run's row, its events' queue rows, the log line): a recipe
 * that threw an error quoting a whole response or file made rows and lines of megabytes.
 */
export const MAX_ERROR_CHARS = 8 * 1024

function errorText(error: unknown): string {
  try {
    // A folder of DATA_DIR's another user made (inbox/, inbox/failed/…): which, whose, the way out — not a bare EACCES.
    const text = accessProblem(error) ?? (error instanceof Error ? error.message || error.name : thrownValueText(error))
    return text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS)}… (${text.length - MAX_ERROR_CHARS} more characters)` : text
  } catch {
    // String() throws for a null-prototype object: a recipe can throw anything, and this runs with the row open.
    return 'threw a value that cannot be shown as text'
  }
}

/**
 * What a recipe threw that is not an Error, as text: a plain object (`throw { code, detail }`, a library's error
 * record) was recorded as "[object Object]". Shown as Node shows it, bounded in depth and length (cycles and
 * null-prototype objects included).
 */
function thrownValueText(value: unknown): string {
  if (typeof value !== 'object' || value === null) return String(value)
  const shown = inspect(value, { depth: 4, maxArrayLength: 20, maxStringLength: 1_000, breakLength: Infinity, compact: true })
  return `threw a value that is not an Error: ${shown}`
}

/** Records a tick that did not run because the previous run is still going. */
export async function recordSkipped(rt: Runtime, recipe: string, trigger: RecipeTrigger<PipelineEvent>, reason: string): Promise<RecipeRun> {
  const now = rt.clock.now()
  const run: RecipeRun = {
    id: timeOrderedId(now, rt.random),
    recipe,
    trigger: trigger.type,
    eventId: trigger.event?.eventId ?? null,
    dryRun: false,
    status: 'skipped',
    startedAt: now,
    endedAt: now,
    summary: reason,
    plan: [],
    planOmitted: {},
    error: null,
  }
  recipeMetrics(rt.metrics).runs.inc({ recipe, trigger: trigger.type, outcome: 'skipped' })
  await rt.store.db
    .insertInto('recipe_runs')
    .values({
      id: run.id, recipe, trigger: run.trigger, event_id: run.eventId, dry_run: 0, status: 'skipped',
      started_at: now, ended_at: now, summary: encodeSummary(reason), plan: null, error: null,
    })
    .execute()
  return run
}

/** A run that outlived RECIPE_TIMEOUT_SECONDS. */
export class RecipeTimeoutError extends Error {
  override readonly name = 'RecipeTimeoutError'
}

/**
 * Settles with the run, or rejects once `ms` have passed on the runtime's clock. JavaScript cannot cancel
 * the run itself: a hung run keeps its promise, but the recipe, its events and the service move on.
 */
function withTimeout<T>(rt: Runtime, work: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    // Kept alive: someone awaits the run (a CLI `recipes run` of a hung recipe ends failed, not with Node's exit 13).
    const cancel = rt.clock.setTimeout(() => reject(new RecipeTimeoutError(`timed out after ${Math.round(ms / 1000)} s (RECIPE_TIMEOUT_SECONDS)`)), ms, { keepAlive: true })
    work.then(
      (value) => {
        cancel()
        resolve(value)
      },
      (error: unknown) => {
        cancel()
        reject(error)
      },
    )
  })
}

/**
 * Runs a recipe once and records it: a `running` row first (so other replicas see it), then the outcome.
 * A throw from the recipe is captured as a failed run; it never escapes. Every run — scheduled, event, manual,
 * dry — still going after RECIPE_TIMEOUT_SECONDS is recorded failed ("timed out after N s") and returns, so it
 * holds nothing back: the recipe's next run does not wait for the timed-out code, which may still be running
 * (it cannot be cancelled) and whose side effects may land later.
 */
export async function executeRun(
  rt: Runtime,
  name: string,
  definition: RecipeDefinition,
  options: { trigger: RecipeTrigger<PipelineEvent>; dryRun: boolean; timezone: string },
): Promise<RecipeRun> {
  const { trigger, dryRun, timezone } = options
  const startedAt = rt.clock.now()
  const id = timeOrderedId(startedAt, rt.random)
  const effects: Effects = { dryRun, plan: [] }
  const log = rt.log.child({ recipe: name, run_id: id, trigger: trigger.type, dry_run: dryRun })
  const insertRow = () =>
    rt.store.db
      .insertInto('recipe_runs')
      .values({
        id, recipe: name, trigger: trigger.type, event_id: trigger.event?.eventId ?? null, dry_run: dryRun ? 1 : 0,
        status: 'running', started_at: startedAt, ended_at: null, summary: null, plan: null, error: null, process: runOwner(rt),
      })
      .execute()
  // A real run takes the recipe's one running slot, or throws RecipeRunningError (another process's run holds it).
  if (dryRun) await insertRow()
  else await takeRunSlot(rt, name, insertRow)
  const bindings = createBindings(rt, effects, name, timezone)
  // Every member with an effect refuses once the run is over (src/recipes/open-while-running.ts).
  const run = runClock()
  const late = (what: string) => log.warn({ call: what }, `recipe "${name}" called ${what} after its run ended; refused (README → Recipes → Every run has the time limit)`)
  const open = <T extends object>(target: T, path: string, members: readonly string[] | 'all') => openWhileRunning(target, path, members, run, late)
  const ctx: RecipeContext<PipelineEvent> = {
    name,
    trigger,
    dryRun,
    now: new Date(startedAt),
    timezone,
    log,
    client: open(dryRun ? dryRunClient(rt.workspaceClient(), effects, name) : recipeClient(rt.workspaceClient()), 'ctx.client', 'all'),
    data: createQueries(rt),
    campaigns: open(bindings.campaigns, 'ctx.campaigns', ['launchBatch', 'scheduleCall', 'scheduleCalls', 'runFollowUps', 'addToDnc', 'removeFromDnc']),
    reports: open(bindings.reports, 'ctx.reports', ['sendDailyReport']),
    mail: open(bindings.mail, 'ctx.mail', ['send']),
    destinations: open(bindings.destinations, 'ctx.destinations', ['publish']),
    state: open(createKvState(rt, recipeStateNamespace(name), effects), 'ctx.state', ['set', 'delete']),
    plan: effects.plan,
    config: rt.config,
  }
  let status: RunStatus = 'succeeded'
  let result: unknown
  let error: string | null = null
  let timedOut = false
  const timeoutMs = rt.config.pipeline.recipeTimeoutMs
  // The loader matched the trigger's events to the recipe's `on`, which is what types them for the recipe.
  const running = Promise.resolve().then(() => definition.run(ctx as RecipeContext))
  try {
    // Every run is cut off: a hung one would otherwise hold its recipe's queue (ticks, Run now, event batches
    // behind it) for good, and its `running` row would read as in progress for RUN_STALE_MS.
    result = await withTimeout(rt, running, timeoutMs)
  } catch (thrown) {
    status = 'failed'
    error = errorText(thrown) + recipeFrame(thrown, [rt.config.recipes.dir], name)
    if (thrown instanceof RecipeTimeoutError) {
      timedOut = true
      const next = trigger.type === 'event' ? 'its events are retried with backoff' : 'the recipe\'s next run goes ahead'
      log.error({ timeout_ms: timeoutMs, events: trigger.events?.length ?? 0 },
        `recipe "${name}" timed out after ${Math.round(timeoutMs / 1000)} s: run recorded failed; ${next}, without waiting for the timed-out code (README → Recipes → Every run has the time limit)`)
      // Said if it ever does: whatever it did meanwhile happened after the run was recorded failed.
      const late = () => log.warn({ late_ms: rt.clock.now() - startedAt - timeoutMs }, `a timed-out run of recipe "${name}" ended after all; it stays recorded failed`)
      running.then(late, late)
    } else if (thrown instanceof Error && thrown.message.length > MAX_ERROR_CHARS) log.error({ error }, 'recipe run failed') // its stack repeats the message whole
    else if (accessProblem(thrown)) log.error({ error }, 'recipe run failed') // a folder's owner or mode, not a bug: no stack
    else log.error({ err: thrown }, 'recipe run failed')
  }
  // Calls the recipe made and did not wait for (a missing `await`): they happen within the run, so its record holds
  // them — a call went out after the run was recorded with none planned. Not after a timeout: nothing waits then.
  if (!timedOut && run.inFlight.size > 0) {
    const pending = [...new Set(run.inFlight.values())]
    log.warn({ calls: pending }, `recipe "${name}" returned while ${pending.join(', ')} it called was still going (a missing await?): the run waits for it, so that its record holds what it did`)
    const left = Math.max(0, timeoutMs - (rt.clock.now() - startedAt))
    // Until none is left: what it did not wait for may start more of the same.
    const drained = async () => {
      while (run.inFlight.size > 0) await Promise.all(run.inFlight.keys())
    }
    await withTimeout(rt, drained(), left).catch(() => {
      log.error({ calls: [...new Set(run.inFlight.values())] }, `recipe "${name}": what it did not wait for was still going at its time limit; whatever it does now is not in the run's record`)
    })
  }
  run.ended = true
  const endedAt = rt.clock.now()
  try {
    const outcome = timedOut ? 'timed_out' : status
    const metrics = recipeMetrics(rt.metrics)
    if (!dryRun) {
      metrics.runs.inc({ recipe: name, trigger: trigger.type, outcome })
      metrics.runSeconds.observe({ recipe: name, outcome }, (endedAt - startedAt) / 1000)
      if (trigger.events) metrics.batchSize.observe({ recipe: name }, trigger.events.length)
    }
    const { text: stored, replaced } = storableSummary(result)
    const summary = decodeSummary(stored)
    // What JSON could not keep as it was (an Error, a Map, a throwing toJSON, nesting past the bound) is stored as a
    // stand-in: said here, or the recipe's author would find `{}` or a marker and not know why.
    if (replaced.length > 0) {
      log.warn({ replaced: replaced.slice(0, 10), replaced_count: replaced.length }, "the run's summary held values JSON cannot keep as they are; stored with stand-ins for them")
    }
    // Written again while the database refuses it for a moment (a dropped connection, a failover): closed `failed`
    // instead, a run that succeeded had its whole batch of events run a second time.
    const record = rt.store.db
      .updateTable('recipe_runs')
      .set({ status, ended_at: endedAt, summary: stored, plan: encodePlan(effects.plan), error })
      .where('id', '=', id)
    await writeAgain(rt.clock, () => record.execute(), {
      tries: RECORD_TRIES,
      everyMs: RECORD_RETRY_MS,
      retryable: isMomentaryError,
      onFirstFailure: (failure) => log.warn({ err: (failure as Error)?.message ?? String(failure) }, "could not record a recipe run's outcome; trying again"),
    })
    if (status === 'succeeded') log.info({ summary }, 'recipe run succeeded')
    return {
      id, recipe: name, trigger: trigger.type, eventId: trigger.event?.eventId ?? null, dryRun, status,
      startedAt, endedAt, summary, plan: effects.plan, planOmitted: {}, error, result,
    }
  } catch (recording) {
    // The outcome could not be written as it is (a plan entry the recipe pushed that is not JSON, say). The row must
    // not read as running for RUN_STALE_MS, holding the recipe back: close it failed, with the reason and without
    // the parts that failed to write. If this write fails too (the database is down), that error is the one thrown,
    // and the run is closed once the database takes the write (keep-closing.ts).
    log.error({ err: recording }, 'recording a recipe run failed; closing it as failed')
    const why = `could not record the run's outcome: ${errorText(recording)}`
    const closed = error === null ? why : `${error}; ${why}`
    const failed = { status: 'failed', ended_at: endedAt, summary: null, plan: null, error: closed }
    try {
      await rt.store.db.updateTable('recipe_runs').set(failed).where('id', '=', id).execute()
    } catch (down) {
      // Not even that (the database is down): the row would hold the recipe back as running; it is closed later.
      keepClosing(rt, id, failed)
      throw down
    }
    // As recorded: the plan may be what could not be written (and what a caller printing it would trip on too).
    return {
      id, recipe: name, trigger: trigger.type, eventId: trigger.event?.eventId ?? null, dryRun, status: 'failed',
      startedAt, endedAt, summary: null, plan: [], planOmitted: {}, error: closed, result,
    }
  }
}

/** A recorded run as a listing shows it: everything but its plan. */
export type RunRecord = Omit<RecipeRun, 'plan' | 'planOmitted' | 'result'>

/** A `recipe_runs` row, but for its plan, as a run. */
function recordOf(r: Omit<Selectable<RecipeRunsTable>, 'plan'>): RunRecord {
  return {
    id: r.id,
    recipe: r.recipe,
    trigger: r.trigger as RecipeTriggerType,
    eventId: r.event_id,
    dryRun: Number(r.dry_run) === 1,
    status: r.status as RunStatus,
    startedAt: Number(r.started_at),
    endedAt: r.ended_at === null ? null : Number(r.ended_at),
    summary: decodeSummary(r.summary),
    error: r.error,
  }
}

/** A `recipe_runs` row as a run (its `result`, the value in memory, is not stored). */
function recordedRun(r: Selectable<RecipeRunsTable>): RecipeRun {
  const plan = decodePlan(r.plan)
  return { ...recordOf(r), plan: plan.effects, planOmitted: plan.omitted }
}

type RunsQuery = { recipe?: string; eventId?: string; limit?: number }

/** Every column of `recipe_runs` but the plan, which only a run's own page and the admin API's runs read. */
const RECORD_COLUMNS = ['id', 'recipe', 'trigger', 'event_id', 'dry_run', 'status', 'started_at', 'ended_at', 'summary', 'error', 'process'] as const

/**
 * Recorded runs, newest first, with their plans as kept (the admin API's runs, `recipes runs --json`'s counts): a
 * recipe's (the (recipe, started_at) index), an event's (the event_id index) or every recipe's.
 */
export async function listRuns(rt: Runtime, query: RunsQuery = {}): Promise<RecipeRun[]> {
  return (await closingAbandoned(rt, await newestRuns(rt, query, (q) => q.selectAll()))).map(recordedRun)
}

/** As listRuns, without the plans: what the dashboard's lists of runs show. */
export async function listRunRecords(rt: Runtime, query: RunsQuery = {}): Promise<RunRecord[]> {
  return (await closingAbandoned(rt, await newestRuns(rt, query, (q) => q.select(RECORD_COLUMNS)))).map(recordOf)
}

type RunState = Pick<Selectable<RecipeRunsTable>, 'id' | 'status' | 'process' | 'ended_at' | 'error'>

/**
 * The rows, with every `running` one whose process is known to have stopped (killed, crashed: on this machine) closed
 * as failed as it is read — a dry run's too, which no other check closes (they never hold a recipe back): a dry run
 * whose `recipes run --dry-run` was killed read `running` for an hour, until a service start swept it.
 */
export async function closingAbandoned<R extends RunState>(rt: Runtime, rows: R[]): Promise<R[]> {
  if (!rows.some((r) => r.status === 'running' && r.process)) return rows
  const now = rt.clock.now()
  return Promise.all(
    rows.map(async (r) => {
      if (r.status !== 'running' || !r.process || isProcessAlive(r.process) !== false) return r
      if (!(await closeAbandonedRun(rt, r.id, now))) {
        // Closed meanwhile by its own process or another reader: read as it is now.
        const current = await rt.store.db.selectFrom('recipe_runs').select(['status', 'ended_at', 'error']).where('id', '=', r.id).executeTakeFirst()
        return current ? { ...r, ...current } : r
      }
      return { ...r, status: 'failed', ended_at: now, error: ABANDONED_RUN_ERROR }
    }),
  )
}

/**
 * The newest `limit` rows of the query. Every recipe's are read recipe by recipe, the newest `limit` of each, and
 * merged: ordered by start alone, the database read and sorted every run kept (a run per event batch adds up over a
 * month).
 */
async function newestRuns<R extends { id: string; started_at: number | bigint | string }>(
  rt: Runtime,
  query: RunsQuery,
  columns: (q: SelectQueryBuilder<Database, 'recipe_runs', object>) => SelectQueryBuilder<Database, 'recipe_runs', R>,
): Promise<R[]> {
  const limit = query.limit ?? 50
  const newest = (recipe: string | undefined) => {
    let q = columns(rt.store.db.selectFrom('recipe_runs'))
    if (recipe !== undefined) q = q.where('recipe', '=', recipe)
    if (query.eventId !== undefined) q = q.where('event_id', '=', query.eventId)
    return q.orderBy('started_at', 'desc').orderBy('id', 'desc').limit(limit).execute()
  }
  if (query.recipe !== undefined || query.eventId !== undefined) return newest(query.recipe)
  const perRecipe = await Promise.all((await leadingKeys(rt.store.db, 'recipe_runs', 'recipe')).map(newest))
  return perRecipe
    .flat()
    .sort((a, b) => Number(b.started_at) - Number(a.started_at) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
    .slice(0, limit)
}

/** One recorded run of `recipe`, or undefined when it has none with this id (the dashboard's run page). */
export async function getRun(rt: Runtime, recipe: string, id: string): Promise<RecipeRun | undefined> {
  const row = await rt.store.db.selectFrom('recipe_runs').selectAll().where('id', '=', id).where('recipe', '=', recipe).executeTakeFirst()
  return row ? recordedRun((await closingAbandoned(rt, [row]))[0]!) : undefined
}
