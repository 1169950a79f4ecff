import { decodeSummary } from './summary.ts'
import { folderFingerprint } from './folder-fingerprint.ts'
import { watch, type FSWatcher } from 'node:fs'
import type { Runtime } from '../runtime.ts'
import type { PipelineEvent } from '../events/hooks.ts'
import { createKvState } from './state.ts'
import { claimTick, latestTickClaim, reclaimTick, tickRanSince } from './claims.ts'
import { createEventDispatch } from './event-dispatch.ts'
import type { RecipeTrigger, RecipeTriggerType } from './define.ts'
import { loadRecipes, type LoadedRecipe } from './loader.ts'
import { loadWatchOf } from './load-watch.ts'
import { closingAbandoned, executeRun, recordSkipped, type RecipeRun } from './runner.ts'
import { createScheduler, nextTick, previousTick, type Scheduler } from './scheduler.ts'
import { createRecipeSubscriptions } from './subscriptions.ts'
import { createTypeVerdicts, installationTypeCacheFile, typeCacheFile } from './type-verdicts.ts'
import { formatDiagnostic, type RecipeDiagnostic } from './diagnostic.ts'
import { realRunInProgress, RecipeBusyError, RecipeRunningError, RUN_STALE_MS, StillBrokenError, StoppedBeforeTurnError } from './overlap.ts'

export { RecipeRunningError, RetryRunsAloneError } from './overlap.ts'

/** A recipe as `recipes list` shows it. */
/** A recipe's schedule as armed, and since when (see noteSchedulesSeen in createRecipeEngine). */
interface ArmedSchedule {
  pattern: string
  timezone: string
  since: number
}

export interface RecipeInfo {
  name: string
  file: string
  description: string | null
  schedule: string | null
  timezone: string
  on: string[]
  /** Why the recipe cannot run; it is skipped until the file is fixed. */
  broken: string | null
  /** Next scheduled tick (epoch ms). */
  nextRun: number | null
  lastRun: { id: string; trigger: string; status: string; startedAt: number; endedAt: number | null; summary: unknown; error: string | null } | null
}

export interface RunRequest {
  dryRun?: boolean
  trigger?: RecipeTrigger<PipelineEvent>
}

export interface RecipeEngine {
  /** Loads (or reloads) RECIPES_DIR and reschedules. */
  reload(): Promise<LoadedRecipe[]>
  recipes(): LoadedRecipe[]
  list(): Promise<RecipeInfo[]>
  /**
   * Runs a recipe now (manual unless a trigger is given); waits for a real run of it in progress in this process
   * to finish first. A real run refuses (RecipeRunningError) while one is in progress in another process. A dry
   * run never conflicts: it waits for the real run in progress here, but never holds a real one back. Either waits
   * for an interrupted event's retry running alone here, and refuses (RetryRunsAloneError) if it is still going after
   * MANUAL_RETRY_WAIT_MS.
   */
  run(name: string, request?: RunRequest): Promise<RecipeRun>
  /** Starts schedules, the missed-tick catch-up and (optionally) the folder watch. */
  start(options?: { watch?: boolean }): Promise<void>
  /**
   * The pipeline's recipe-trigger consumer: queues a batch of processed events for each recipe whose `on`
   * subscribes to them (once per recipe and event); the recipes' queues run after `start`.
   */
  enqueueEvents(batch: PipelineEvent[]): Promise<void>
  /** Resolves when every run started so far has finished (tests, shutdown). */
  idle(): Promise<void>
  stop(): Promise<void>
}

export class UnknownRecipeError extends Error {
  constructor(name: string, known: string[]) {
    super(`no recipe named "${name}"${known.length ? ` (recipes: ${known.join(', ')})` : ' (the recipes folder is empty)'}`)
    this.name = 'UnknownRecipeError'
  }
}

export class BrokenRecipeError extends Error {
  constructor(name: string, reason: string) {
    super(`recipe "${name}" is broken: ${reason}`)
    this.name = 'BrokenRecipeError'
  }
}

const WATCH_DEBOUNCE_MS = 150
/** How often a watching engine also compares the folder with what it loaded (real time, as the watch is). */
const WATCH_POLL_MS = 2_000
/** How often the engine looks for a scheduled tick that did not run (see catchUp). */
export const TICK_SWEEP_MS = 60_000
/** The longest a claimed tick waits for its turn behind a run of the same recipe before it is recorded as skipped. */
const TICK_TURN_WAIT_MS = 60_000
/** A claimed tick with no run recorded this long after its claim was lost: another replica (or this one) runs it. */
export const TICK_CLAIM_LOST_MS = 5 * 60_000
const SCHEDULER_NS = 'switchboard:scheduler'
/**
 * The longest a manual or dry run waits for an interrupted event's retry running alone before it is refused: well
 * within the time a request waits on the processing thread for it (TASK_WAIT_MS, src/processing-host.ts).
 */
export const MANUAL_RETRY_WAIT_MS = 60_000

export interface RecipeEngineOptions {
  /** Defaults to RECIPES_DIR. */
  dir?: string
  /** Report recipes with type errors as broken; defaults to RECIPES_TYPECHECK. */
  typeCheck?: boolean
  /** How long one recipe file may take to load before it is reported broken; defaults to RECIPE_LOAD_TIME_LIMIT_MS. */
  loadTimeLimitMs?: number
}

export function createRecipeEngine(rt: Runtime, options: RecipeEngineOptions = {}): RecipeEngine {
  const dir = options.dir ?? rt.config.recipes.dir
  const fallbackTz = rt.config.recipes.timezone
  const log = rt.log.child({ component: 'recipes' })
  const schedulerState = createKvState(rt, SCHEDULER_NS)
  const verdicts = (options.typeCheck ?? rt.config.recipes.typeCheck) ? createTypeVerdicts({ cacheFile: typeCacheFile(rt.config.dataDir), sharedFile: installationTypeCacheFile() }) : undefined
  // Settles when the last load's recipes all have a type verdict; runs and listings wait for it.
  let typeChecked: Promise<void> = Promise.resolve()
  let typeCheckFailed = false
  let loaded: LoadedRecipe[] = []
  // Each loaded recipe's `on`, or the last known one for a recipe that does not load (see subscriptions.ts).
  let subscriptions = new Map<string, readonly string[]>()
  const subscriptionMemory = createRecipeSubscriptions(rt)
  let loadedOnce: Promise<void> | undefined
  let scheduler: Scheduler | undefined
  let watcher: FSWatcher | undefined
  let stopPolling: (() => void) | undefined
  /** The folder as the last reload read it (src/recipes/folder-fingerprint.ts). */
  let loadedFingerprint: string | undefined
  let debounce: ReturnType<typeof setTimeout> | undefined
  let reloading: Promise<LoadedRecipe[]> | undefined
  let stopped = false
  // One real run at a time per recipe in this process: the tail of each recipe's queue (dry runs never join it;
  // a tail never rejects).
  const tails = new Map<string, Promise<unknown>>()
  const inFlight = new Set<Promise<unknown>>()

  const track = <T>(p: Promise<T>): Promise<T> => {
    inFlight.add(p)
    void p.finally(() => inFlight.delete(p)).catch(() => {})
    return p
  }

  const find = (name: string): LoadedRecipe => {
    const recipe = loaded.find((r) => r.name === name)
    if (!recipe) throw new UnknownRecipeError(name, loaded.map((r) => r.name))
    return recipe
  }

  const ensureLoaded = async () => {
    loadedOnce ??= engine.reload().then(() => {})
    // A first load that failed is tried again by the next caller, not remembered as failed for good.
    await loadedOnce.catch((error: unknown) => {
      loadedOnce = undefined
      throw error
    })
  }

  /**
   * Queues a run behind any real run of the same recipe in this process. A dry run waits there too (its plan then
   * reads what the real run left) but is not queued as the tail: a real run or tick never waits for, or is skipped
   * because of, a dry run — at worst the two run side by side (a dry run places, launches and sends nothing).
   *
   * The queue always moves on: every run ends within RECIPE_TIMEOUT_SECONDS (runner.ts), timed out if need be,
   * and a timed-out run's code — which cannot be cancelled and may never settle — is not waited for: the next run
   * starts beside it. With `maxWaitMs` (event batches, which hold claims on their events) a run that has not had
   * its turn that long after `waitingSince` (default: now) gives up with RecipeBusyError rather than waiting on. The
   * tail settles only once this run and everything before it have, so one that gave up never lets a later run start
   * beside the run it gave up on. With `stopping` (event batches again), a run whose turn has not come when it is
   * aborted gives up with StoppedBeforeTurnError: the service is stopping, and a batch that never began hands its events
   * back rather than waiting on — or starting — during the stop.
   */
  const exclusive = (
    name: string,
    fn: () => Promise<RecipeRun>,
    options: { dryRun?: boolean; maxWaitMs?: number; waitingSince?: number; stopping?: AbortSignal } = {},
  ): Promise<RecipeRun> => {
    const previous = tails.get(name)
    let turn: Promise<unknown> = previous ?? Promise.resolve()
    if (previous !== undefined && options.maxWaitMs !== undefined) turn = turnWithin(name, previous, options.maxWaitMs, options.waitingSince ?? rt.clock.now())
    const { stopping } = options
    if (stopping) turn = turnUnlessStopped(name, turn, stopping)
    const next = turn.then(() => {
      if (stopping?.aborted) throw new StoppedBeforeTurnError(name)
      return fn()
    })
    if (options.dryRun) return track(next)
    const tail = Promise.allSettled([previous, next])
    tails.set(name, tail)
    void tail.finally(() => {
      if (tails.get(name) === tail) tails.delete(name)
    })
    return track(next)
  }

  /** Resolves when `previous` settles, or rejects with RecipeBusyError `ms` after `since` on the runtime's clock. */
  const turnWithin = (name: string, previous: Promise<unknown>, ms: number, since: number) =>
    new Promise<void>((resolve, reject) => {
      const left = since + ms - rt.clock.now()
      // Its time was up before it asked (an event batch's wait counts from its claim): it gives up at once.
      if (left <= 0) return reject(new RecipeBusyError(name, ms))
      const cancel = rt.clock.setTimeout(() => reject(new RecipeBusyError(name, ms)), left)
      const done = () => {
        cancel()
        resolve()
      }
      previous.then(done, done)
    })

  /** Settles as `turn` does, or rejects with StoppedBeforeTurnError once `stopping` is aborted, whichever comes first. */
  const turnUnlessStopped = (name: string, turn: Promise<unknown>, stopping: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      const stop = () => reject(new StoppedBeforeTurnError(name))
      if (stopping.aborted) return stop()
      stopping.addEventListener('abort', stop, { once: true })
      turn.then(
        () => {
          stopping.removeEventListener('abort', stop)
          resolve()
        },
        (error: unknown) => {
          stopping.removeEventListener('abort', stop)
          reject(error)
        },
      )
    })

  /** Per recipe, the reason of the last event run recorded skipped for being broken in this process. */
  const skippedBroken = new Map<string, string>()
  const runNow = async (recipe: LoadedRecipe, trigger: RecipeTrigger<PipelineEvent>, dryRun: boolean): Promise<RecipeRun> => {
    // A recipe with type errors never runs: wait for its verdict (immediate when cached).
    await typeChecked
    if (!recipe.definition) {
      if (trigger.type === 'manual') throw new BrokenRecipeError(recipe.name, recipe.error ?? 'not loaded')
      const reason = `skipped: recipe is broken: ${recipe.error ?? 'not loaded'}`
      if (trigger.type === 'event' && skippedBroken.get(recipe.name) === reason) throw new StillBrokenError(recipe.name)
      if (trigger.type === 'event') skippedBroken.set(recipe.name, reason)
      return recordSkipped(rt, recipe.name, trigger, reason)
    }
    skippedBroken.delete(recipe.name)
    return executeRun(rt, recipe.name, recipe.definition, { trigger, dryRun, timezone: recipe.timezone })
  }

  const markTypeError = (recipe: LoadedRecipe, diagnostic: RecipeDiagnostic) => {
    recipe.definition = undefined
    recipe.error = `type error at ${formatDiagnostic(diagnostic)}`
  }

  /**
   * Applies cached verdicts at once (so a known-bad recipe is never scheduled) and sends the rest to the
   * type-check thread; when they come back, recipes with errors turn broken and leave the schedule.
   */
  /** Recipes whose type verdict was asked for and has not come back. */
  const awaitingVerdict = new Set<string>()
  const checkTypes = (recipes: LoadedRecipe[]) => {
    if (!verdicts) return
    const pending: LoadedRecipe[] = []
    const known = verdicts.cached(recipes.filter((r) => r.definition).map((r) => r.file))
    for (const r of recipes) {
      if (!r.definition) continue
      const cached = known.get(r.file)
      if (cached) markTypeError(r, cached)
      else if (cached === undefined) pending.push(r)
    }
    if (pending.length === 0) return
    for (const r of pending) awaitingVerdict.add(r.name)
    typeChecked = verdicts
      .check(pending.map((r) => r.file))
      .then((found) => {
        for (const r of pending) {
          awaitingVerdict.delete(r.name)
          const diagnostic = found.get(r.file)
          if (diagnostic && r.definition) markTypeError(r, diagnostic)
        }
        if (scheduler && !stopped && loaded === recipes) {
          reportBroken()
          scheduler.set(scheduledEntries())
          // A recipe a type error took off the schedule is disarmed as a broken one is: once fixed, its schedule starts
          // afresh — a tick missed while it was broken is not "caught up" at the next start.
          void noteSchedulesSeen().catch((error: unknown) => log.warn({ err: error }, 'could not record the recipes\' schedules'))
        }
      })
      .catch((error: unknown) => {
        for (const r of pending) awaitingVerdict.delete(r.name)
        // Without a verdict (TypeScript missing from a production install, a crashed thread) recipes run as
        // before the check existed: type errors then surface at run time.
        // Stopping closes the checker under a check still running: that is not a failure worth a warning.
        if (!typeCheckFailed && !stopped) log.warn({ err: error }, 'recipes could not be type-checked; they run unchecked')
        typeCheckFailed = true
      })
  }

  const runningElsewhere = async (name: string): Promise<boolean> => (await realRunInProgress(rt, name)) !== undefined

  /** Ticks this engine is claiming or running now (`name@tickAt`): the sweep leaves them alone. */
  const ticksUnderWay = new Set<string>()

  /**
   * A tick, claimed (`claim`: by default the scheduler's claim; the sweep's takes over the claim of one whose run was
   * never recorded), then run: skipped (and recorded) if a run of the recipe is still going here or on a replica.
   */
  const runTick = async (name: string, tickAt: number, type: RecipeTriggerType, claim = () => claimTick(rt, name, tickAt)) => {
    if (stopped) return
    const key = `${name}@${tickAt}`
    ticksUnderWay.add(key)
    try {
      // Claim only once the recipe's type verdict is in: a tick claimed and then held behind a slow first
      // type check would make this replica skip the ticks that follow (a run still queued), while another
      // replica that already has its verdict could have run them.
      await typeChecked
      if (stopped || !loaded.find((r) => r.name === name)?.definition) return
      // While an interrupted event's retry runs alone (event-dispatch.ts), the tick waits for it — unclaimed, so the
      // claim below still comes within TICK_TURN_WAIT_MS of its run — and then runs; a retry due meanwhile waits for
      // the tick. Beside it, a tick that hung the thread interrupted the retry, and the retry's recipe was blamed.
      await dispatch.beside(name, async () => {
        if (stopped || !loaded.find((r) => r.name === name)?.definition) return
        if (!(await claim())) return
        const trigger: RecipeTrigger<PipelineEvent> = { type, scheduledAt: tickAt }
        const skip = async () => {
          await recordSkipped(rt, name, trigger, `skipped: the previous run was still in progress at ${new Date(tickAt).toISOString()}`)
          log.warn({ recipe: name, tick_at: tickAt }, 'tick skipped: previous run still in progress')
        }
        if (tails.has(name) || (await runningElsewhere(name))) return await skip()
        const recipe = loaded.find((r) => r.name === name)
        if (!recipe?.definition) return
        try {
          // Its run is recorded within TICK_TURN_WAIT_MS of the claim (or it is skipped): a claim with no run long after
          // that was lost, and the sweep may hand it to another replica.
          await exclusive(name, () => runNow(recipe, trigger, false), { maxWaitMs: TICK_TURN_WAIT_MS })
        } catch (error) {
          // Another process's run started between the look above and this run's start: it holds the running slot. Or
          // an event run that began in between held this recipe past the wait.
          if (error instanceof RecipeRunningError || error instanceof RecipeBusyError) return await skip()
          throw error
        }
      })
    } catch (error) {
      log.error({ err: error, recipe: name, tick_at: tickAt }, 'scheduled tick failed')
    } finally {
      ticksUnderWay.delete(key)
    }
  }

  const scheduledEntries = () =>
    loaded
      .filter((r) => r.definition?.schedule)
      .map((r) => ({ name: r.name, pattern: r.definition!.schedule!, timezone: r.timezone }))

  /**
   * Since when each recipe's schedule (pattern and zone) has been armed, in the scheduler's state: the start-up
   * catch-up only covers ticks after it, so it runs a tick the service missed while down, never one the recipe
   * itself did not have — added, edited to another schedule, re-enabled after a rename to `_…`, or fixed after being
   * broken, all while the service was up. (Only the first sighting of a name was kept: a restart after any of those
   * ran a tick of the old schedule, or of a day the recipe was switched off.) A schedule this engine armed and no
   * longer has (removed, broken, disabled) is forgotten, so its return starts afresh.
   */
  const armedHere = new Set<string>()
  const noteSchedulesSeen = async () => {
    const entries = scheduledEntries()
    for (const entry of entries) {
      armedHere.add(entry.name)
      const key = `armed:${entry.name}`
      const armed = await schedulerState.get<ArmedSchedule>(key)
      if (armed?.pattern === entry.pattern && armed.timezone === entry.timezone) continue
      // From before `armed:` was kept (0.8.0 and earlier), an unchanged recipe counts from its first sighting, so a
      // tick missed across the upgrade is still caught up.
      const legacy = armed ? undefined : await schedulerState.get<number>(`first_seen:${entry.name}`)
      await schedulerState.set(key, { pattern: entry.pattern, timezone: entry.timezone, since: legacy ?? rt.clock.now() } satisfies ArmedSchedule)
    }
    const names = new Set(entries.map((e) => e.name))
    for (const name of [...armedHere]) {
      if (names.has(name)) continue
      armedHere.delete(name)
      await schedulerState.delete(`armed:${name}`)
      await schedulerState.delete(`first_seen:${name}`)
    }
  }

  /**
   * At start-up, the schedules a previous process armed that this folder no longer has (removed, renamed to `_…` or
   * broken while the service was down) are forgotten as well: a recipe added back later is armed afresh, so a
   * restart never "catches up" a tick from the days it was gone.
   */
  const forgetSchedulesGone = async () => {
    const keep = scheduledEntries().flatMap((e) => [`armed:${e.name}`, `first_seen:${e.name}`])
    let gone = rt.store.db
      .deleteFrom('kv_state')
      .where('namespace', '=', SCHEDULER_NS)
      .where((eb) => eb.or([eb('key', 'like', 'armed:%'), eb('key', 'like', 'first_seen:%')]))
    if (keep.length) gone = gone.where('key', 'not in', keep)
    await gone.execute()
  }

  /**
   * Each schedule's latest tick once the sweep has seen it settled — run (or skipped) by someone, or from before the
   * schedule was armed — so the sweep stops asking the database about it every minute until the next tick comes.
   */
  const settledTicks = new Map<string, number>()
  /**
   * Each schedule's latest tick, if it has not run: never claimed (the service was down, or the database was away
   * when it came due — the claim failed), or claimed and never run (its process died, or lost the database, between
   * the claim and the run's record; TICK_CLAIM_LOST_MS after the claim). At start-up, and every TICK_SWEEP_MS after;
   * the sweep leaves a tick alone for TICK_CLAIM_LOST_MS, the scheduler's own time to claim and start it.
   */
  const catchUp = async (atStart: boolean) => {
    const now = rt.clock.now()
    for (const entry of scheduledEntries()) {
      if (stopped) return
      const prev = previousTick(entry.pattern, entry.timezone, now)
      if (prev === undefined || ticksUnderWay.has(`${entry.name}@${prev}`)) continue
      // Past a pause (a machine asleep) the scheduler's timer fires with this one: a tick it has still to fire is its own.
      if (!atStart && (now - prev < TICK_CLAIM_LOST_MS || (scheduler?.nextRun(entry.name) ?? Infinity) <= now)) continue
      if (settledTicks.get(entry.name) === prev) continue
      const armed = await schedulerState.get<ArmedSchedule>(`armed:${entry.name}`)
      if (armed === undefined) continue
      if (armed.since >= prev) {
        settledTicks.set(entry.name, prev)
        continue
      }
      const last = await latestTickClaim(rt, entry.name)
      if (last === undefined || last.tickAt < prev) {
        log.info({ recipe: entry.name, tick_at: prev }, atStart ? 'running a tick missed while down' : 'running a tick missed while the database was away')
        void track(runTick(entry.name, prev, 'catchup'))
        continue
      }
      if (last.tickAt !== prev || now - last.claimedAt < TICK_CLAIM_LOST_MS || tails.has(entry.name)) continue
      if (await tickRanSince(rt, entry.name, last.claimedAt)) {
        settledTicks.set(entry.name, prev)
        continue
      }
      // Taken over as the run is about to start (see runTick), not before a wait.
      void track(
        runTick(entry.name, prev, 'catchup', async () => {
          if (!(await reclaimTick(rt, entry.name, last))) return false
          log.warn({ recipe: entry.name, tick_at: prev, claimed_by: last.owner }, 'running a tick that was claimed but never run')
          return true
        }),
      )
    }
  }

  let sweepTimer: (() => void) | undefined
  const sweepTicks = () => {
    sweepTimer = rt.clock.setTimeout(() => {
      if (stopped) return
      void track(
        catchUp(false)
          .catch((error: unknown) => log.warn({ err: error }, 'looking for scheduled ticks that did not run failed; trying again in a minute'))
          .finally(() => {
            if (!stopped) sweepTicks()
          }),
      )
    }, TICK_SWEEP_MS)
  }

  /**
   * The service logs each broken recipe once (again only when its reason changes, e.g. after an edit).
   * One-shot commands do not: `recipes list` shows the reasons itself, and a healthy recipe's run must not
   * be preceded by errors about other files.
   */
  const reported = new Map<string, string>()
  const reportBroken = () => {
    for (const r of loaded) {
      if (!r.error) {
        // Not known good yet: its type verdict is still coming (an edit elsewhere in the folder sends every recipe's
        // again). Forgotten now, a recipe with the same type error was logged broken again after every such edit.
        if (!awaitingVerdict.has(r.name) && reported.delete(r.name)) {
          // Said as its breaking was: the log's last word on a fixed recipe was that it is broken.
          log.info({ recipe: r.name, file: r.file }, `recipe ${r.name} loads again`)
        }
        continue
      }
      if (reported.get(r.name) === r.error) continue
      reported.set(r.name, r.error)
      log.error({ recipe: r.name, file: r.file, reason: r.error }, `recipe ${r.name} is broken: ${r.error}`)
    }
  }

  const scheduleReload = () => {
    if (debounce) clearTimeout(debounce)
    // Real time on purpose: this coalesces bursts of real file-system events (editors write in steps).
    debounce = setTimeout(() => {
      debounce = undefined
      void engine.reload().catch((error) => log.error({ err: error }, 'reloading recipes failed'))
    }, WATCH_DEBOUNCE_MS)
  }

  // Event batches run like any other run of the recipe: one at a time in this process, recorded, timed out; while
  // a real run of the recipe is going anywhere, its events stay queued (the dispatch claims none). A batch claimed
  // anyway — a run queued here had not written its row yet, or one older than RUN_STALE_MS still going under a
  // RECIPE_TIMEOUT_SECONDS above an hour — waits for its turn at most RECIPE_TIMEOUT_SECONDS, then hands its
  // events back untouched (RecipeBusyError), instead of holding and renewing their claims behind it; and at once when
  // the service stops meanwhile (StoppedBeforeTurnError): held through the stop, the claims of a batch that never began
  // were charged an attempt when the stopped thread's claims were given back (src/instances.ts).
  const dispatch = createEventDispatch(rt, {
    recipes: () => loaded,
    subscriptions: (name) => subscriptions.get(name),
    inProgress: runningElsewhere,
    // The wait counts from the claim, not from this call: loading the batch and renewing its claims came first.
    run: (recipe, events, claimedAt, stopping) =>
      exclusive(recipe.name, () => runNow(recipe, { type: 'event', events, event: events[0] }, false), {
        maxWaitMs: rt.config.pipeline.recipeTimeoutMs,
        waitingSince: claimedAt,
        stopping,
      }),
  })

  const engine: RecipeEngine = {
    async reload() {
      // Serialize reloads; a reload requested during one runs after it with the newest files.
      const run = async () => {
        const fingerprint = folderFingerprint(dir)
        const next = await loadRecipes(dir, fallbackTz, { timeLimitMs: options.loadTimeLimitMs, targets: rt.config.webhook.targets, watch: loadWatchOf(rt) })
        // Before the type verdicts: a recipe with type errors still subscribes to what its definition says.
        // Remembering them is a database write: if it fails, the recipes still load, each with its own `on`.
        const nextSubscriptions = await subscriptionMemory.refresh(next).catch((error: unknown) => {
          log.warn({ err: error }, 'could not record the recipes\' event subscriptions; a broken recipe gets no events until it loads')
          return new Map(next.flatMap((r) => (r.definition?.on ? [[r.name, r.definition.on] as const] : [])))
        })
        checkTypes(next)
        loaded = next
        loadedFingerprint = fingerprint
        subscriptions = nextSubscriptions
        if (scheduler && !stopped) {
          reportBroken()
          await noteSchedulesSeen()
          scheduler.set(scheduledEntries())
          dispatch.start()
        }
        return next
      }
      reloading = (reloading ?? Promise.resolve([])).catch(() => []).then(run)
      loadedOnce ??= reloading.then(() => {})
      return reloading
    },
    recipes: () => loaded,
    async list() {
      // An engine that does not watch its folder (the receiver of `serve`, whose processing thread runs the recipes)
      // reloads when the folder changed since it last read it, so what it lists is what the service runs.
      if (!watcher && loadedOnce && folderFingerprint(dir) !== loadedFingerprint) await engine.reload()
      await ensureLoaded()
      await typeChecked
      const infos: RecipeInfo[] = []
      for (const r of loaded) {
        const def = r.definition
        const last = await rt.store.db
          .selectFrom('recipe_runs')
          .selectAll()
          .where('recipe', '=', r.name)
          .where('dry_run', '=', 0)
          .orderBy('started_at', 'desc')
          .orderBy('id', 'desc')
          .limit(1)
          .executeTakeFirst()
          .then(async (row) => (row ? (await closingAbandoned(rt, [row]))[0] : undefined))
        infos.push({
          name: r.name,
          file: r.file,
          description: def?.description ?? null,
          schedule: def?.schedule ?? null,
          timezone: r.timezone,
          on: def?.on ?? [],
          broken: r.error ?? null,
          nextRun: def?.schedule ? (scheduler?.nextRun(r.name) ?? nextTick(def.schedule, r.timezone, rt.clock.now()) ?? null) : null,
          lastRun: last
            ? { id: last.id, trigger: last.trigger, status: last.status, startedAt: last.started_at, endedAt: last.ended_at, summary: decodeSummary(last.summary), error: last.error }
            : null,
        })
      }
      return infos
    },
    async run(name, request = {}) {
      await ensureLoaded()
      const recipe = find(name)
      if (!recipe.definition) throw new BrokenRecipeError(recipe.name, recipe.error ?? 'not loaded')
      const dryRun = request.dryRun ?? false
      // While an interrupted event's retry runs alone (event-dispatch.ts), a manual or dry run waits for it as a tick
      // does, and a retry due meanwhile waits for the run: beside it, a run that hung the thread interrupted the retry,
      // and the retry's recipe was charged the attempt. At most MANUAL_RETRY_WAIT_MS, then refused (RetryRunsAloneError):
      // the request is answered within the processing thread's task time, never by a run that happens after it gave up.
      return dispatch.beside(
        name,
        () =>
          exclusive(
            name,
            async () => {
              if (!dryRun) {
                await typeChecked
                // Behind this process's own real runs of it: a real run still going now is another process's.
                const running = await realRunInProgress(rt, name)
                if (running) throw new RecipeRunningError(name, running)
              }
              return runNow(find(name), request.trigger ?? { type: 'manual' }, dryRun)
            },
            { dryRun },
          ),
        { what: dryRun ? 'dry run' : 'manual run', maxWaitMs: MANUAL_RETRY_WAIT_MS },
      )
    },
    async start(startOptions = {}) {
      await ensureLoaded()
      if (scheduler || stopped) return
      // Runs a crashed process left `running` would read as in progress forever: close them.
      await rt.store.db
        .updateTable('recipe_runs')
        .set({ status: 'failed', error: 'interrupted: the process stopped during the run', ended_at: rt.clock.now() })
        .where('status', '=', 'running')
        .where('started_at', '<=', rt.clock.now() - RUN_STALE_MS)
        .execute()
      scheduler = createScheduler(rt.clock, (name, tickAt) => void track(runTick(name, tickAt, 'cron')))
      reportBroken()
      await forgetSchedulesGone()
      await noteSchedulesSeen()
      scheduler.set(scheduledEntries())
      await catchUp(true)
      sweepTicks()
      dispatch.start()
      if (startOptions.watch) {
        try {
          // The folder itself, not recursively: on Linux Node 20 watches a recursive tree file by file, and a file an
          // editor saves atomically (a new file renamed over it: vim, JetBrains' safe write, `sed -i`) was seen once,
          // then never again. A folder's own watch sees every rename into it.
          watcher = watch(dir, () => scheduleReload())
          watcher.on('error', (error) => log.warn({ err: error, dir }, 'watching the recipes folder failed; edits are picked up within a few seconds'))
        } catch (error) {
          // No folder yet (the default ./recipes, run from a folder without one): nothing is wrong, and a stack said otherwise.
          if ((error as NodeJS.ErrnoException | null)?.code === 'ENOENT') log.info({ dir }, `no recipes folder at ${dir}: none run until it is made (its recipes are then picked up within a few seconds)`)
          else log.warn({ err: error, dir }, 'cannot watch the recipes folder; edits are picked up within a few seconds')
        }
        // And a look every few seconds at what a reload would read (helpers in lib/ too, which the folder's watch
        // does not cover): a change the watch missed is picked up all the same.
        const look = setInterval(() => {
          if (!stopped && loadedFingerprint !== undefined && folderFingerprint(dir) !== loadedFingerprint) scheduleReload()
        }, WATCH_POLL_MS)
        look.unref()
        stopPolling = () => clearInterval(look)
      }
    },
    async enqueueEvents(batch) {
      await ensureLoaded()
      await dispatch.enqueue(batch)
    },
    async idle() {
      do {
        await dispatch.idle()
        while (inFlight.size) await Promise.allSettled([...inFlight])
      } while (inFlight.size)
    },
    async stop() {
      stopped = true
      scheduler?.stop()
      sweepTimer?.()
      watcher?.close()
      stopPolling?.()
      if (debounce) clearTimeout(debounce)
      await dispatch.stop()
      await engine.idle()
      await verdicts?.close()
    },
  }
  return engine
}

const engines = new WeakMap<Runtime, RecipeEngine>()

/** The runtime's engine, shared by the admin routes, the CLI and background work. */
export function recipeEngineFor(rt: Runtime): RecipeEngine {
  let engine = engines.get(rt)
  if (!engine) {
    engine = createRecipeEngine(rt)
    engines.set(rt, engine)
  }
  return engine
}
