import { watch, type FSWatcher } from 'node:fs'
import type { Runtime } from '../runtime.ts'
import type { ProcessedEvent } from '../webhooks/hooks.ts'
import { createKvState } from './state.ts'
import { claimEventFire, claimTick, lastClaimedTick } from './claims.ts'
import type { RecipeTrigger, RecipeTriggerType } from './define.ts'
import { loadRecipes, type LoadedRecipe } from './loader.ts'
import { executeRun, recordSkipped, type RecipeRun } from './runner.ts'
import { createScheduler, nextTick, previousTick, type Scheduler } from './scheduler.ts'

/** A recipe as `recipes list` shows it. */
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
  lastRun: { id: string; trigger: string; status: string; startedAt: number; endedAt: number | null; summary: string | null; error: string | null } | null
}

export interface RunRequest {
  dryRun?: boolean
  trigger?: RecipeTrigger
}

export interface RecipeEngine {
  /** Loads (or reloads) RECIPES_DIR and reschedules. */
  reload(): Promise<LoadedRecipe[]>
  recipes(): LoadedRecipe[]
  list(): Promise<RecipeInfo[]>
  /** Runs a recipe now (manual unless a trigger is given); waits for a run in progress to finish first. */
  run(name: string, request?: RunRequest): Promise<RecipeRun>
  /** Starts schedules, the missed-tick catch-up and (optionally) the folder watch. */
  start(options?: { watch?: boolean }): Promise<void>
  /** The event-trigger hook: runs each recipe whose `on` lists the event's type, once per event. */
  handleEvent(event: ProcessedEvent): Promise<void>
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

/** A run still marked `running` after this long is taken for a crashed process, not a live run. */
const RUN_STALE_MS = 60 * 60 * 1000
const WATCH_DEBOUNCE_MS = 150
const SCHEDULER_NS = 'switchboard:scheduler'

export interface RecipeEngineOptions {
  /** Defaults to RECIPES_DIR. */
  dir?: string
}

export function createRecipeEngine(rt: Runtime, options: RecipeEngineOptions = {}): RecipeEngine {
  const dir = options.dir ?? rt.config.recipes.dir
  const fallbackTz = rt.config.recipes.timezone
  const log = rt.log.child({ component: 'recipes' })
  const schedulerState = createKvState(rt, SCHEDULER_NS)
  let loaded: LoadedRecipe[] = []
  let loadedOnce: Promise<void> | undefined
  let scheduler: Scheduler | undefined
  let watcher: FSWatcher | undefined
  let debounce: ReturnType<typeof setTimeout> | undefined
  let reloading: Promise<LoadedRecipe[]> | undefined
  let stopped = false
  // One run at a time per recipe in this process: the tail of each recipe's queue.
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
    await loadedOnce
  }

  /** Queues a run behind any run of the same recipe in this process. */
  const exclusive = (name: string, fn: () => Promise<RecipeRun>): Promise<RecipeRun> => {
    const previous = tails.get(name) ?? Promise.resolve()
    const next = previous.catch(() => {}).then(fn)
    tails.set(name, next)
    void next.finally(() => {
      if (tails.get(name) === next) tails.delete(name)
    }).catch(() => {})
    return track(next)
  }

  const runNow = (recipe: LoadedRecipe, trigger: RecipeTrigger, dryRun: boolean) => {
    if (!recipe.definition) throw new BrokenRecipeError(recipe.name, recipe.error ?? 'not loaded')
    return executeRun(rt, recipe.name, recipe.definition, { trigger, dryRun, timezone: recipe.timezone })
  }

  const runningElsewhere = async (name: string): Promise<boolean> => {
    const row = await rt.store.db
      .selectFrom('recipe_runs')
      .select('id')
      .where('recipe', '=', name)
      .where('status', '=', 'running')
      .where('dry_run', '=', 0)
      .where('started_at', '>', rt.clock.now() - RUN_STALE_MS)
      .executeTakeFirst()
    return row !== undefined
  }

  /** A claimed tick: skipped (and recorded) if a run of the recipe is still going here or on a replica. */
  const runTick = async (name: string, tickAt: number, type: RecipeTriggerType) => {
    if (stopped) return
    try {
      if (!(await claimTick(rt, name, tickAt))) return
      const trigger: RecipeTrigger = { type, scheduledAt: tickAt }
      if (tails.has(name) || (await runningElsewhere(name))) {
        await recordSkipped(rt, name, trigger, `skipped: the previous run was still in progress at ${new Date(tickAt).toISOString()}`)
        log.warn({ recipe: name, tick_at: tickAt }, 'tick skipped: previous run still in progress')
        return
      }
      const recipe = loaded.find((r) => r.name === name)
      if (!recipe?.definition) return
      await exclusive(name, () => runNow(recipe, trigger, false))
    } catch (error) {
      log.error({ err: error, recipe: name, tick_at: tickAt }, 'scheduled tick failed')
    }
  }

  const scheduledEntries = () =>
    loaded
      .filter((r) => r.definition?.schedule)
      .map((r) => ({ name: r.name, pattern: r.definition!.schedule!, timezone: r.timezone }))

  /** Remembers when a schedule was first seen, so a brand-new recipe does not "catch up" a tick it never had. */
  const noteSchedulesSeen = async () => {
    for (const entry of scheduledEntries()) {
      const key = `first_seen:${entry.name}`
      if ((await schedulerState.get<number>(key)) === undefined) await schedulerState.set(key, rt.clock.now())
    }
  }

  const catchUp = async () => {
    const now = rt.clock.now()
    for (const entry of scheduledEntries()) {
      const prev = previousTick(entry.pattern, entry.timezone, now)
      if (prev === undefined) continue
      const last = (await lastClaimedTick(rt, entry.name)) ?? (await schedulerState.get<number>(`first_seen:${entry.name}`))
      if (last === undefined || last >= prev) continue
      log.info({ recipe: entry.name, tick_at: prev }, 'running a tick missed while down')
      void track(runTick(entry.name, prev, 'catchup'))
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

  const engine: RecipeEngine = {
    async reload() {
      // Serialize reloads; a reload requested during one runs after it with the newest files.
      const run = async () => {
        const next = await loadRecipes(dir, fallbackTz)
        loaded = next
        for (const r of next) if (r.error) log.error({ recipe: r.name, file: r.file, reason: r.error }, 'recipe is broken')
        if (scheduler && !stopped) {
          await noteSchedulesSeen()
          scheduler.set(scheduledEntries())
        }
        return next
      }
      reloading = (reloading ?? Promise.resolve([])).catch(() => []).then(run)
      loadedOnce ??= reloading.then(() => {})
      return reloading
    },
    recipes: () => loaded,
    async list() {
      await ensureLoaded()
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
            ? { id: last.id, trigger: last.trigger, status: last.status, startedAt: last.started_at, endedAt: last.ended_at, summary: last.summary, error: last.error }
            : null,
        })
      }
      return infos
    },
    async run(name, request = {}) {
      await ensureLoaded()
      const recipe = find(name)
      if (!recipe.definition) throw new BrokenRecipeError(recipe.name, recipe.error ?? 'not loaded')
      return exclusive(name, () => runNow(find(name), request.trigger ?? { type: 'manual' }, request.dryRun ?? false))
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
      await noteSchedulesSeen()
      scheduler.set(scheduledEntries())
      await catchUp()
      if (startOptions.watch) {
        try {
          watcher = watch(dir, () => scheduleReload())
          watcher.on('error', (error) => log.warn({ err: error, dir }, 'watching the recipes folder failed; edits need a restart'))
        } catch (error) {
          log.warn({ err: error, dir }, 'cannot watch the recipes folder; edits need a restart')
        }
      }
    },
    async handleEvent(event) {
      await ensureLoaded()
      for (const recipe of loaded) {
        if (!recipe.definition?.on?.includes(event.eventType as never)) continue
        // Claim before running: a redelivered or replayed event finds the claim and does nothing.
        if (!(await claimEventFire(rt, recipe.name, event.eventId))) continue
        await exclusive(recipe.name, () => runNow(recipe, { type: 'event', event }, false))
      }
    },
    async idle() {
      while (inFlight.size) await Promise.allSettled([...inFlight])
    },
    async stop() {
      stopped = true
      scheduler?.stop()
      watcher?.close()
      if (debounce) clearTimeout(debounce)
      await engine.idle()
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
