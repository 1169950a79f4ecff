import type { Runtime } from '../runtime.ts'
import { isProcessAlive, processIdentity } from '../utils/process-identity.ts'

/** A run still marked `running` after this long is taken for a crashed process, not a live run. */
export const RUN_STALE_MS = 60 * 60 * 1000

/**
 * Who runs a recipe, as its `recipe_runs` row keeps it: the process's identity and the runtime's instance id
 * (`<boot>/<namespace>/<pid>/<start>/<instance>`). The process part tells another process on the machine whether the
 * run's process still lives; the instance part tells which of a process's runtimes it was — `serve` runs recipes on
 * its processing thread, which can die and be restarted while the process lives on (src/instances.ts →
 * releaseInstance closes that thread's runs). Null where a process cannot be identified (no /proc).
 */
export function runOwner(rt: Pick<Runtime, 'instanceId'>): string | null {
  const process = processIdentity()
  return process ? `${process}/${rt.instanceId}` : null
}

/** A real (not dry) run of a recipe that is still going, as its `recipe_runs` row says. */
export interface RunInProgress {
  id: string
  trigger: string
  startedAt: number
}

/**
 * The real run of a recipe in progress in any process, if any. Dry runs never count. A recipe's real runs never
 * overlap, so one in progress is the newest real run started: only that row is read (the (recipe, started_at)
 * index, newest first, past any skipped tick), which keeps the check cheap for a recipe that runs an event batch
 * every second — a scan of every run of the last hour would not be. A `running` row older than RUN_STALE_MS is
 * taken for a crashed process; so is one whose process, on this machine, is known to have stopped (killed, crashed)
 * — that row is closed as failed on the spot, rather than holding the recipe back for the rest of the hour.
 */
export async function realRunInProgress(rt: Runtime, recipe: string): Promise<RunInProgress | undefined> {
  const row = await rt.store.db
    .selectFrom('recipe_runs')
    .select(['id', 'trigger', 'status', 'started_at', 'process'])
    .where('recipe', '=', recipe)
    .where('dry_run', '=', 0)
    .where('status', '!=', 'skipped')
    .where('started_at', '>', rt.clock.now() - RUN_STALE_MS)
    .orderBy('started_at', 'desc')
    // Two real runs started in the same millisecond (two processes that checked at once): the running one.
    .orderBy((eb) => eb.case().when('status', '=', 'running').then(0).else(1).end())
    .limit(1)
    .executeTakeFirst()
  if (row?.status !== 'running') return undefined
  if (row.process && isProcessAlive(row.process) === false) {
    await closeAbandonedRun(rt, row.id)
    return undefined
  }
  return { id: row.id, trigger: row.trigger, startedAt: Number(row.started_at) }
}

/** A unique violation: better-sqlite3's SQLITE_CONSTRAINT_UNIQUE, or Postgres' 23505. */
function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === '23505'
}

/**
 * Writes a real run's `running` row with `insert`, which takes the recipe's one running slot (migration 0018: a
 * partial unique index). Checking first (realRunInProgress) and inserting after left a gap: two processes that
 * both found nothing running both started. With the slot taken, the loser finds out here — RecipeRunningError,
 * before any of its code runs. A slot still held by a run that is no longer in progress (its process stopped, or
 * it started more than RUN_STALE_MS ago) is closed and taken.
 */
export async function takeRunSlot(rt: Runtime, recipe: string, insert: () => Promise<unknown>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await insert()
      return
    } catch (error) {
      if (!isUniqueViolation(error)) throw error
      // Closes the row of a process known to have stopped, as it reads.
      const running = await realRunInProgress(rt, recipe)
      if (running) throw new RecipeRunningError(recipe, running)
      if (attempt >= 3) throw error
      await closeStaleRuns(rt, recipe)
    }
  }
}

/** Closes a recipe's real runs still marked running past RUN_STALE_MS: taken for crashed processes. */
async function closeStaleRuns(rt: Runtime, recipe: string): Promise<void> {
  const now = rt.clock.now()
  const closed = await rt.store.db
    .updateTable('recipe_runs')
    .set({ status: 'failed', ended_at: now, error: `still marked running after ${RUN_STALE_MS / 60_000} minutes: taken for a process that stopped` })
    .where('recipe', '=', recipe)
    .where('status', '=', 'running')
    .where('dry_run', '=', 0)
    .where('started_at', '<=', now - RUN_STALE_MS)
    .executeTakeFirst()
  if (Number(closed.numUpdatedRows) > 0) rt.log.warn({ recipe }, 'a recipe run still marked running after an hour was closed as failed')
}

/** What a run left running by a process that stopped is closed with. */
export const ABANDONED_RUN_ERROR = 'the process running it stopped before it finished (killed or crashed)'

/** Closes a run whose process stopped before it finished; false (a no-op) if it was closed meanwhile. */
export async function closeAbandonedRun(rt: Runtime, id: string, endedAt = rt.clock.now()): Promise<boolean> {
  const closed = await rt.store.db
    .updateTable('recipe_runs')
    .set({ status: 'failed', ended_at: endedAt, error: ABANDONED_RUN_ERROR })
    .where('id', '=', id)
    .where('status', '=', 'running')
    .executeTakeFirst()
  if (Number(closed.numUpdatedRows) === 0) return false
  rt.log.warn({ run_id: id }, 'a recipe run was left running by a process that stopped; closed as failed')
  return true
}

/** A real run asked for while another process (the service, a replica, the CLI) is running the same recipe. */
export class RecipeRunningError extends Error {
  constructor(
    readonly recipe: string,
    readonly running: RunInProgress,
  ) {
    super(
      `recipe "${recipe}" is already running: ${/^[aeiou]/.test(running.trigger) ? 'an' : 'a'} ${running.trigger} run started at ${new Date(running.startedAt).toISOString()} ` +
        `in another process (run ${running.id}); try again when it has finished (a dry run can go ahead)`,
    )
    this.name = 'RecipeRunningError'
  }
}

/**
 * An event batch of a recipe found broken again for the reason its last skipped run recorded (a type error whose verdict
 * every edit in the folder asks for again): its events go back to the queue, with no run recorded and no warning — a
 * skipped run and a warning per save, for the one reason already said, filled the recipe's last runs.
 */
export class StillBrokenError extends Error {
  constructor(readonly recipe: string) {
    super(`recipe "${recipe}" is still broken for the reason its last skipped run recorded`)
    this.name = 'StillBrokenError'
  }
}

/**
 * An event batch that waited RECIPE_TIMEOUT_SECONDS for the recipe's run ahead of it in this process and did not
 * get its turn: it is not run, and its events go back to the queue untouched.
 */
export class RecipeBusyError extends Error {
  constructor(
    readonly recipe: string,
    readonly waitedMs: number,
  ) {
    super(`recipe "${recipe}" was still busy in this process after ${Math.round(waitedMs / 1000)} s; the batch was not run`)
    this.name = 'RecipeBusyError'
  }
}

/**
 * A manual or dry run (Run now, `POST /admin/recipes/:name/run`) asked for while an interrupted event's retry runs
 * alone in this process (src/recipes/event-dispatch.ts → isolate), which did not end within the wait: it is not run,
 * and not run later either — the request is answered now, within the processing thread's task time.
 */
export class RetryRunsAloneError extends Error {
  constructor(
    readonly recipe: string,
    readonly retrying: string,
    readonly waitedMs: number,
  ) {
    super(
      `recipe "${recipe}" was not run: the retry of ${retrying}'s interrupted run, which runs with no other recipe beside it, ` +
        `was still going after ${Math.round(waitedMs / 1000)} s; try again when it has finished`,
    )
    this.name = 'RetryRunsAloneError'
  }
}

/**
 * An event batch still waiting for its turn (behind a run of its recipe in this process) when the service stops: it
 * is not run, and its events go back to the queue untouched — no attempt spent on a run that never began.
 */
export class StoppedBeforeTurnError extends Error {
  constructor(readonly recipe: string) {
    super(`the service is stopping while a batch of recipe "${recipe}" waited for its turn; the batch was not run`)
    this.name = 'StoppedBeforeTurnError'
  }
}
