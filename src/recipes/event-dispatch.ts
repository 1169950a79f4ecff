import type { Runtime } from '../runtime.ts'
import { backoffMs } from '../utils/backoff.ts'
import { sleep } from '../utils/clock.ts'
import { writeAgain } from '../utils/write-again.ts'
import { nextTurn } from '../utils/next-turn.ts'
import { logRepeatedError } from '../utils/repeated-error-log.ts'
import type { PipelineEvent } from '../events/hooks.ts'
import { parseRow } from '../webhooks/processing.ts'
import { claimFireBatch, enqueueEventFires, finishFires, INTERRUPTED_ERROR_PREFIX, releaseFires, renewFireClaims, type FireRow } from './claims.ts'
import type { LoadedRecipe } from './loader.ts'
import { RecipeBusyError, RecipeRunningError, RetryRunsAloneError, StillBrokenError, StoppedBeforeTurnError } from './overlap.ts'
import type { RecipeRun } from './runner.ts'
import { summaryText } from './summary.ts'

/** How long a claimed batch is protected from other workers; renewed while its run lasts. */
export const FIRE_CLAIM_MS = 10_000
/** The sweep picks up retries that fell due and events queued by another process. */
const SWEEP_MS = 1_000
/** Events kept in memory between queueing and running (beyond this, a run reads them back from storage). */
const MEMO_LIMIT = 20_000
/** How an interrupted run's events' error starts (src/recipes/claims.ts); they are retried alone: see `isolate`. */
export { INTERRUPTED_ERROR_PREFIX }
/** A batch's outcome the database refused is written again this often, this many times (well within its claim). */
const SETTLE_RETRY_MS = 1_000
const SETTLE_TRIES = 5

/** The event ids a log line names: a batch's first SHOWN_IDS (a retry is one event; a first run up to RECIPE_BATCH_MAX). */
const SHOWN_IDS = 20
function shownIds(ids: string[]): string[] {
  return ids.length <= SHOWN_IDS ? ids : [...ids.slice(0, SHOWN_IDS), `… ${ids.length - SHOWN_IDS} more`]
}

/** A fire whose last run was interrupted (its retry runs alone: see `isolate`). */
const isInterrupted = (row: FireRow) => row.last_error?.startsWith(INTERRUPTED_ERROR_PREFIX) === true

/** Whether a recipe's `on` list subscribes to an event: provider types as is, named targets as `<target>:<type>`. */
export function subscribes(on: readonly string[], event: PipelineEvent): boolean {
  if (event.kind !== 'target') return on.includes(event.eventType)
  return on.includes(`${event.target}:${event.eventType}`) || on.includes(`${event.target}:*`)
}

export interface EventDispatch {
  /** The pipeline's recipe-trigger consumer: queues each event for every recipe subscribed to it. */
  enqueue(batch: PipelineEvent[]): Promise<void>
  /** Starts the per-recipe runners and the sweep. */
  start(): void
  wake(recipe?: string): void
  /**
   * Runs `fn` — a scheduled, manual or dry run of `recipe` — as a batch runs beside the others: it waits while an
   * interrupted event's retry runs alone (see `isolate`), and such a retry waits for it to end before it starts. With
   * `maxWaitMs`, a wait that has not ended that long after the call gives up with RetryRunsAloneError (`fn` never runs).
   * `what` names the run in the line saying it waits.
   */
  beside<T>(recipe: string, fn: () => Promise<T>, options?: { what?: string; maxWaitMs?: number }): Promise<T>
  /** Resolves when no batch is being claimed or run. */
  idle(): Promise<void>
  stop(): Promise<void>
}

export interface DispatchDeps {
  recipes(): LoadedRecipe[]
  /** What a loaded recipe subscribes to: its own `on`, or the last known one while it is broken. */
  subscriptions(name: string): readonly string[] | undefined
  /**
   * Whether a real run of the recipe is in progress (this process's, or another's: a manual run, a tick, a replica's
   * batch). Its events then stay queued, unclaimed, and the sweep looks again: a batch never runs beside it.
   */
  inProgress(name: string): Promise<boolean>
  /**
   * Runs one batch (the engine: one run at a time per recipe, recorded, timed out). Rejects with RecipeBusyError when
   * another run of the recipe in this process kept it from starting in time — counted from `claimedAt`, the moment
   * its events were claimed: the batch is then handed back. Rejects with StoppedBeforeTurnError when `stopping` is
   * aborted (the dispatch stops) before its turn came: handed back too.
   */
  run(recipe: LoadedRecipe, events: PipelineEvent[], claimedAt: number, stopping: AbortSignal): Promise<RecipeRun>
}

/**
 * Event triggers as a per-recipe queue. The pipeline only records (recipe, event) pairs — durable, once per
 * pair whatever the redeliveries — and each recipe drains its own queue: everything queued when its
 * previous run ended (up to RECIPE_BATCH_MAX, after RECIPE_BATCH_WAIT_MS) is one run. A slow, failing or
 * hung recipe therefore holds back only its own queue, never processing, the receiver or other recipes.
 * A failed run's events are retried with backoff, one event per run, and are dead after
 * PROCESSING_MAX_ATTEMPTS.
 */
export function createEventDispatch(rt: Runtime, deps: DispatchDeps): EventDispatch {
  const owner = `${rt.instanceId}:recipes`
  const log = rt.log.child({ component: 'recipes' })
  const { recipeBatchMax, recipeBatchWaitMs } = rt.config.pipeline
  const memo = new Map<string, PipelineEvent>()
  const passes = new Map<string, Promise<void>>()
  const again = new Set<string>()
  let started = false
  let stopped = false
  let cancelSweep: (() => void) | undefined

  async function load(rows: FireRow[]): Promise<PipelineEvent[]> {
    const key = (id: string) => `${rows[0]?.recipe ?? ''}\u0000${id}`
    const missing = rows.filter((r) => !memo.has(key(r.event_id))).map((r) => r.event_id)
    const loaded = new Map<string, PipelineEvent>()
    for (let i = 0; i < missing.length; i += 200) {
      const found = await rt.store.db.selectFrom('webhook_events').selectAll().where('event_id', 'in', missing.slice(i, i + 200)).execute()
      for (const row of found) {
        try {
          loaded.set(row.event_id, parseRow(rt, row))
        } catch {
          // Unparseable events never reach recipes (processing dead-letters them).
        }
      }
    }
    return rows.map((r) => memo.get(key(r.event_id)) ?? loaded.get(r.event_id)).filter((e): e is PipelineEvent => e !== undefined)
  }

  /**
   * Aborted when the dispatch stops: batches writing their outcome again give up their waits at once, and batches still
   * waiting for their recipe's turn are handed back (DispatchDeps.run).
   */
  const stopping = new AbortController()

  /**
   * Writes a batch's outcome, again while the database refuses it (src/utils/write-again.ts): the run has happened,
   * and until its fires say so only their claims keep the events from running a second time. Every SETTLE_RETRY_MS,
   * SETTLE_TRIES times in all — within the claims' life (FIRE_CLAIM_MS), renewed between tries.
   */
  async function settle(recipe: string, ids: string[], write: () => Promise<unknown>): Promise<void> {
    let failed = false
    await writeAgain(rt.clock, write, {
      tries: SETTLE_TRIES,
      everyMs: SETTLE_RETRY_MS,
      signal: stopping.signal,
      stillOurs: async () => (await renewFireClaims(rt, recipe, owner, FIRE_CLAIM_MS)) >= ids.length,
      onFirstFailure: (error) => {
        failed = true
        log.warn({ recipe, events: ids.length, err: (error as Error)?.message ?? String(error) }, 'could not record a batch\'s outcome; trying again while its claims hold')
      },
    })
    if (failed) log.info({ recipe, events: ids.length }, 'recorded the batch\'s outcome once the database took it')
  }

  /** Runs a claimed batch and settles its fires; false when the recipe stayed busy and the batch was handed back. */
  async function runBatch(recipe: LoadedRecipe, rows: FireRow[], claimedAt: number): Promise<boolean> {
    const ids = rows.map((r) => r.event_id)
    const events = await load(rows)
    // Still ours? A process frozen past FIRE_CLAIM_MS since its claim (a VM paused, a laptop asleep) finds them taken:
    // another has claimed them, and perhaps run them already — running them too would be each event twice. Renewed
    // here, as the run starts, so what it runs is what it holds (the run's slot keeps a second run out after that).
    if ((await renewFireClaims(rt, recipe.name, owner, FIRE_CLAIM_MS)) < ids.length) {
      log.warn({ recipe: recipe.name, events: ids.length }, 'claims on a batch lapsed before its run (was this process paused?); another process has them, so this one does not run them')
      await releaseFires(rt, recipe.name, owner, ids)
      return false
    }
    if (events.length === 0) {
      await finishFires(rt, recipe.name, owner, ids, { status: 'dead', runId: null, error: 'event no longer stored' })
      return true
    }
    // Queued while its `on` listed them, of a type it lists no more (an edit narrowed it): given up, not run — a recipe
    // narrowed to stop handling call.busy got the busy events already queued, and a `crm:*` recipe provider events.
    const on = recipe.definition?.on
    const unlisted = on ? events.filter((e) => !subscribes(on, e)) : []
    if (unlisted.length > 0) {
      const gone = new Set(unlisted.map((e) => e.eventId))
      const types = [...new Set(unlisted.map((e) => (e.kind === 'target' ? `${e.target}:${e.eventType}` : e.eventType)))].join(', ')
      const reason = `given up: recipe "${recipe.name}" no longer lists ${types} in its "on"`
      await finishFires(rt, recipe.name, owner, [...gone], { status: 'dead', runId: null, error: reason })
      log.info({ recipe: recipe.name, events: gone.size }, `${gone.size} queued event(s) of a type the recipe no longer takes: ${reason}`)
      for (const id of gone) memo.delete(`${recipe.name}\u0000${id}`)
      const left = rows.filter((r) => !gone.has(r.event_id))
      return left.length === 0 ? true : runBatch(recipe, left, claimedAt)
    }
    // Renew the claim while the run lasts, so a long run is not taken over; a killed process stops renewing.
    let renewing = true
    let cancelRenew: (() => void) | undefined
    const renew = () => {
      cancelRenew = rt.clock.setTimeout(() => {
        if (!renewing) return
        // Re-armed at once, not after the write: a slow database must not let the claim lapse meanwhile.
        renew()
        void renewFireClaims(rt, recipe.name, owner, FIRE_CLAIM_MS).catch(() => {})
      }, FIRE_CLAIM_MS / 3)
    }
    renew()
    let run: RecipeRun
    try {
      run = await deps.run(recipe, events, claimedAt, stopping.signal)
    } catch (error) {
      // Never run: the dispatch stopped while it waited for its turn — held through the stop, its claims were charged
      // an attempt when the stopped thread's claims were given back (src/instances.ts) — the next start claims them.
      // Broken again for the reason already recorded and logged: back to the queue, said once only.
      if (error instanceof StillBrokenError) {
        await releaseFires(rt, recipe.name, owner, ids)
        return true
      }
      if (error instanceof StoppedBeforeTurnError) {
        log.info({ recipe: recipe.name, events: ids.length }, `${error.message}; its events go back to its queue, no attempt spent`)
        await releaseFires(rt, recipe.name, owner, ids)
        return false
      }
      // Never run: another run of the recipe here kept it busy past the wait, or one in another process took the
      // recipe's running slot between the sweep's look and this run's start. The events go back to the queue as
      // they were, no attempt spent (their claims, renewed while the run waited for its turn, are given back here);
      // the sweep claims them again.
      if (!(error instanceof RecipeBusyError) && !(error instanceof RecipeRunningError)) throw error
      const waited = error instanceof RecipeBusyError ? { waited_ms: error.waitedMs } : { running: error.running.id }
      // Another replica's run took the recipe's slot first: the normal course with several workers, not a warning.
      const level = error instanceof RecipeRunningError ? 'info' : 'warn'
      log[level]({ recipe: recipe.name, events: ids.length, ...waited }, `${error.message}; its events go back to its queue`)
      await releaseFires(rt, recipe.name, owner, ids)
      return false
    } finally {
      renewing = false
      cancelRenew?.()
    }
    for (const id of ids) memo.delete(`${recipe.name}\u0000${id}`)
    if (run.status === 'skipped') {
      // Not run: the recipe turned out broken (its type verdict came in after the claim). The events go back
      // to its queue as they were, no attempt spent, and wait for the fix.
      log.warn({ recipe: recipe.name, events: ids.length, reason: run.summary ?? null }, 'recipe is broken; its events wait in its queue until it is fixed')
      await releaseFires(rt, recipe.name, owner, ids)
      return true
    }
    if (run.status === 'succeeded') {
      await settle(recipe.name, ids, () => finishFires(rt, recipe.name, owner, ids, { status: 'done', runId: run.id }))
      return true
    }
    const attempts = Math.max(...rows.map((r) => r.attempts)) + 1
    const error = run.error ?? (run.summary === null || run.summary === undefined ? 'run did not succeed' : summaryText(run.summary))
    if (attempts >= rt.config.webhook.maxAttempts) {
      log.error({ recipe: recipe.name, events: ids.length, event_ids: shownIds(ids), attempts, err: error }, 'recipe gave up on these events (dead)')
      await settle(recipe.name, ids, () => finishFires(rt, recipe.name, owner, ids, { status: 'dead', runId: run.id, error }))
      return true
    }
    const nextAttemptAt = rt.clock.now() + backoffMs(attempts, rt.random.next)
    log.warn({ recipe: recipe.name, events: ids.length, event_ids: shownIds(ids), attempts, next_attempt_at: nextAttemptAt, err: error }, 'recipe run failed; its events will be retried one by one')
    await settle(recipe.name, ids, () => finishFires(rt, recipe.name, owner, ids, { status: 'failed', runId: run.id, error, nextAttemptAt }))
    return true
  }

  /**
   * Events whose run was interrupted — the processing thread stopped answering (a recipe that never yields), or it or
   * the process ended — are retried with no other batch of any recipe running beside them. Every run in progress when
   * the thread stops is interrupted, and each of their events is charged an attempt (src/instances.ts): retried side by
   * side, a recipe's events were interrupted again each time the one that loops ran beside them, until they were dead
   * for a fault not theirs. Alone, the run that stops the thread again is the one that loops; the others go through.
   * Other batches wait (before they claim) while an isolated one runs; it waits for those already running to end, its
   * events unclaimed meanwhile.
   * Scheduled runs too (the engine runs them through `beside`): a tick that hung the thread beside the retry interrupted
   * it, and the retry's recipe was charged the attempt.
   */
  let batchesRunning = 0
  let isolated: Promise<void> | undefined
  /** The recipe whose interrupted events' retry is running alone, or waiting to. */
  let isolatedRecipe: string | undefined
  const batchEnded = new Set<() => void>()

  async function counted<T>(fn: () => Promise<T>): Promise<T> {
    batchesRunning++
    try {
      return await fn()
    } finally {
      batchesRunning--
      for (const resolve of batchEnded) resolve()
    }
  }

  const runCounted = (recipe: LoadedRecipe, rows: FireRow[], claimedAt: number) => counted(() => runBatch(recipe, rows, claimedAt))

  async function beside<T>(recipe: string, fn: () => Promise<T>, options: { what?: string; maxWaitMs?: number } = {}): Promise<T> {
    const what = options.what ?? 'scheduled run'
    if (isolated) log.info({ recipe, waits_for: isolatedRecipe }, `${what} of ${recipe} waits for the retry of ${isolatedRecipe}'s interrupted run, which runs alone; it starts when that ends`)
    const since = rt.clock.now()
    while (isolated) await (options.maxWaitMs === undefined ? isolated : isolatedWithin(recipe, options.maxWaitMs, since))
    // Counted from here, with no turn given up in between: a retry claimed meanwhile waits for it.
    return counted(fn)
  }

  /** Resolves when the retry running alone now ends, or rejects with RetryRunsAloneError `ms` after `since`. */
  const isolatedWithin = (recipe: string, ms: number, since: number) =>
    new Promise<void>((resolve, reject) => {
      const current = isolated
      if (!current) return resolve()
      const giveUp = () => reject(new RetryRunsAloneError(recipe, isolatedRecipe ?? 'another recipe', ms))
      const left = since + ms - rt.clock.now()
      if (left <= 0) return giveUp()
      const cancel = rt.clock.setTimeout(giveUp, left)
      void current.then(() => {
        cancel()
        resolve()
      })
    })

  /**
   * Runs claimed interrupted events alone: at once when nothing is running and no other retry is waiting to. Otherwise
   * they are handed back as they were before the wait — for the runs in progress, which may take RECIPE_TIMEOUT_SECONDS,
   * or for the other retry — and the recipe's queue is claimed again once this one may run. Held through the wait, their
   * claims (FIRE_CLAIM_MS, not renewed) lapsed: another replica claimed them and the retry then gave them up as "lapsed";
   * a thread stopped meanwhile charged them an attempt for a run they had not begun (src/instances.ts); and their wait
   * for their recipe's turn (DispatchDeps.run) counted from a claim long past. Unclaimed, a replica with nothing running
   * may take them meanwhile; the claim after the wait takes what the recipe's queue holds due then — the same retry, or
   * another, or new events, which then run alone too.
   */
  async function isolate(recipe: LoadedRecipe, rows: FireRow[], claimedAt: number): Promise<boolean> {
    const waits = isolated !== undefined || batchesRunning > 0
    if (waits) await releaseFires(rt, recipe.name, owner, rows.map((r) => r.event_id))
    while (isolated) await isolated
    let release = () => {}
    isolated = new Promise<void>((resolve) => (release = resolve))
    isolatedRecipe = recipe.name
    try {
      if (batchesRunning > 0 && !stopped) log.info({ recipe: recipe.name, runs: batchesRunning }, `the retry of ${recipe.name}'s interrupted run waits for the runs in progress to end (${batchesRunning}); its events go back to the queue meanwhile`)
      while (batchesRunning > 0 && !stopped) await new Promise<void>((resolve) => batchEnded.add(resolve)).finally(() => batchEnded.clear())
      if (waits) {
        // Stopping meanwhile, or the recipe removed or broken: its events wait in the queue as they were.
        const current = deps.recipes().find((r) => r.name === recipe.name)
        if (stopped || !current?.definition?.on?.length) return false
        recipe = current
        claimedAt = rt.clock.now()
        rows = await claimFireBatch(rt, recipe.name, owner, recipeBatchMax, FIRE_CLAIM_MS)
        // Taken by another replica meanwhile (or the recipe is running elsewhere): the sweep looks later.
        if (rows.length === 0) return false
      }
      // Stopping meanwhile: its events go back to the queue as they were, for the next start.
      if (stopped) {
        await releaseFires(rt, recipe.name, owner, rows.map((r) => r.event_id))
        return false
      }
      if (rows.some(isInterrupted)) log.info({ recipe: recipe.name, event_ids: rows.map((r) => r.event_id), attempts: Math.max(...rows.map((r) => r.attempts)) }, 'retrying events whose run was interrupted, with no other recipe running beside them')
      return await runCounted(recipe, rows, claimedAt)
    } finally {
      isolated = undefined
      isolatedRecipe = undefined
      release()
    }
  }

  async function drain(name: string): Promise<void> {
    if (recipeBatchWaitMs > 0) await sleep(rt.clock, recipeBatchWaitMs)
    while (!stopped) {
      const recipe = deps.recipes().find((r) => r.name === name)
      // A recipe removed or broken keeps its queue until it is back.
      if (!recipe?.definition?.on?.length) return
      // The recipe is running elsewhere: nothing is claimed, so nothing is spent or run twice; the sweep retries.
      if (await deps.inProgress(name)) return
      // An interrupted run's retry goes alone (see `isolate`): nothing is claimed meanwhile.
      while (isolated) await isolated
      const claimedAt = rt.clock.now()
      const rows = await claimFireBatch(rt, name, owner, recipeBatchMax, FIRE_CLAIM_MS)
      if (rows.length === 0) return
      const interrupted = rows.some(isInterrupted)
      // A retry that goes alone began while this batch was being claimed: run now, the batch ran beside it. It is handed
      // back as it was (its claims are not held through the wait) and claimed again once that retry has ended.
      if (!interrupted && isolated) {
        await releaseFires(rt, name, owner, rows.map((r) => r.event_id))
        continue
      }
      // Handed back: claiming the same events again now would only wait again; the sweep looks later.
      if (!(await (interrupted ? isolate : runCounted)(recipe, rows, claimedAt))) return
      // The rest of the thread (messages, timers) gets a turn between batches (src/utils/next-turn.ts).
      await nextTurn()
    }
  }

  function wakeOne(name: string): void {
    if (stopped || !started) return
    if (passes.has(name)) {
      again.add(name)
      return
    }
    const pass = drain(name)
      .catch((error) => logRepeatedError(rt, { recipe: name, err: (error as Error).message }, 'recipe event queue failed; will try again', log))
      .finally(() => {
        passes.delete(name)
        if (again.delete(name)) wakeOne(name)
      })
    passes.set(name, pass)
  }

  function wake(recipe?: string): void {
    if (recipe) return wakeOne(recipe)
    for (const r of deps.recipes()) if (r.definition?.on?.length) wakeOne(r.name)
  }

  const hasEventRecipes = () => deps.recipes().some((r) => r.definition?.on?.length)

  /** Armed only while some recipe has `on`: a service of cron recipes keeps no timer ticking every second. */
  function sweep(): void {
    cancelSweep = undefined
    if (stopped || !hasEventRecipes()) return
    wake()
    cancelSweep = rt.clock.setTimeout(sweep, SWEEP_MS)
  }

  return {
    async enqueue(batch) {
      const pairs: Array<{ recipe: string; eventId: string }> = []
      const byId = new Map(batch.map((e) => [e.eventId, e]))
      for (const recipe of deps.recipes()) {
        // A broken recipe keeps getting its events (under its last known subscriptions); it runs them once fixed.
        const on = deps.subscriptions(recipe.name)
        if (!on?.length) continue
        for (const e of batch) if (subscribes(on, e)) pairs.push({ recipe: recipe.name, eventId: e.eventId })
      }
      if (pairs.length === 0) return
      const fresh = await enqueueEventFires(rt, pairs)
      const woken = new Set<string>()
      for (const f of fresh) {
        if (memo.size < MEMO_LIMIT) memo.set(`${f.recipe}\u0000${f.eventId}`, byId.get(f.eventId)!)
        woken.add(f.recipe)
      }
      for (const name of woken) wakeOne(name)
    },
    start() {
      if (stopped) return
      started = true
      // Also called after each reload: arms the sweep when the first event recipe appears.
      if (!cancelSweep) sweep()
    },
    wake,
    beside,
    async idle() {
      for (let i = 0; i < 1000 && passes.size > 0; i++) await Promise.allSettled([...passes.values()])
    },
    async stop() {
      stopped = true
      cancelSweep?.()
      stopping.abort()
      await Promise.allSettled([...passes.values()])
    },
  }
}
