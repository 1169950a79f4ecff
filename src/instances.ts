import { hostname } from 'node:os'
import { sql } from 'kysely'
import type { Runtime } from './runtime.ts'
import { leadingKeys } from './db/leading-keys.ts'
import { every } from './utils/every.ts'
import { isProcessAlive, processIdentity } from './utils/process-identity.ts'
import { RUN_STALE_MS } from './recipes/overlap.ts'
import { recipeMetrics } from './recipes/metrics.ts'
import { INTERRUPTED_ERROR_PREFIX } from './recipes/event-dispatch.ts'
import { forgetPausesOf } from './destinations/pauses.ts'

/**
 * Claims of a killed instance, given back at once. Work is claimed for a while (an event's processing, a queued
 * call, a delivery, a recipe's events, a mail): a process killed with claims out leaves them to lapse, 17–25 s
 * later, before anyone does that work again. But a process that stopped running is known for certain on its own
 * machine: each runtime of `serve` registers its exact process identity (boot, pid namespace, pid, start time);
 * when it starts, and every REAP_MS after, each one looks at the registered instances it can judge — same boot,
 * same pid namespace — and for each whose process is gone, clears its claims and leases and its row. Instances
 * on other machines (or in other containers' namespaces) cannot be judged from here: their claims lapse as
 * before. A live instance is never judged dead (its process exists), so nothing is sent twice by two live
 * replicas; what the killed one had in flight goes out again — at least once, as after a lapse.
 */

/** How often a running instance looks for killed ones on its machine. */
export const REAP_MS = 10_000
/** When a recipe's events its stopped thread or process was running are due again. */
const INTERRUPTED_RETRY_MS = 30_000

/** Registers this runtime as a running instance (no-op where a process cannot be identified). */
export async function registerInstance(rt: Runtime): Promise<boolean> {
  const process = processIdentity()
  if (!process) return false
  await rt.store.db
    .insertInto('instances')
    .values({ id: rt.instanceId, process, host: hostname(), started_at: rt.clock.now() })
    .onConflict((oc) => oc.column('id').doUpdateSet({ process, host: hostname(), started_at: rt.clock.now() }))
    .execute()
  return true
}

export async function unregisterInstance(rt: Runtime): Promise<void> {
  await rt.store.db.deleteFrom('instances').where('id', '=', rt.instanceId).execute()
}

/** Gives back the claims and leases of every registered instance on this machine whose process is gone; returns their ids. */
export async function reapDeadInstances(rt: Runtime): Promise<string[]> {
  const rows = await rt.store.db.selectFrom('instances').select(['id', 'process']).where('id', '!=', rt.instanceId).execute()
  const dead = rows.filter((r) => isProcessAlive(r.process) === false).map((r) => r.id)
  for (const id of dead) await releaseInstance(rt, id)
  if (dead.length) rt.log.warn({ instances: dead }, 'instances on this machine stopped without giving back their claims; their work is claimable again')
  return dead
}

/**
 * Gives back everything instance `id` holds — its claims in every table and its leases — and forgets it. Only for
 * an instance known to have stopped: its process is gone, or it was the processing thread that died. Each table
 * is read through an index over the rows that can be claimed (never its whole history: on SQLite a statement
 * holds the one write lock the receiver's commits wait for), one statement at a time; a crash half-way leaves the
 * instance registered, and the next look finishes the job.
 */
export async function releaseInstance(rt: Runtime, id: string): Promise<void> {
  const db = rt.store.db
  // Its recipe runs still marked running never finish: closed as failed, or the recipe would wait RUN_STALE_MS (an
  // hour) for them — every tick skipped, every manual run refused. Only the last RUN_STALE_MS can hold one (older
  // ones count as stopped anyway), read a recipe at a time through the (recipe, started_at) index.
  const registered = await db.selectFrom('instances').select('process').where('id', '=', id).executeTakeFirst()
  if (registered) {
    const names = await leadingKeys(db, 'recipe_runs', 'recipe')
    if (names.length) {
      const interrupted = await db
        .updateTable('recipe_runs')
        .set({ status: 'failed', ended_at: rt.clock.now(), error: 'interrupted: its process or processing thread stopped during the run' })
        .where('recipe', 'in', names)
        .where('started_at', '>', rt.clock.now() - RUN_STALE_MS)
        .where('status', '=', 'running')
        .where('process', '=', `${registered.process}/${id}`)
        .returning(['id', 'recipe', 'trigger', 'started_at'])
        .execute()
      // Counted as every other run's end is: an alert on failed runs missed the worst kind, a recipe that ends its thread.
      const metrics = recipeMetrics(rt.metrics)
      for (const run of interrupted) {
        metrics.runs.inc({ recipe: run.recipe, trigger: run.trigger, outcome: 'failed' })
        metrics.runSeconds.observe({ recipe: run.recipe, outcome: 'failed' }, Math.max(0, rt.clock.now() - Number(run.started_at)) / 1000)
      }
      // Which recipes were running when it stopped: one of them, if it was a recipe that never yields. Each named with
      // its run's trigger: only an event run is tried again (its events); a scheduled one's tick is not.
      if (interrupted.length) {
        const named = [...new Set(interrupted.map((r) => `${r.recipe} (${r.trigger})`))].join(', ')
        const next = [
          ...(interrupted.some((r) => r.trigger === 'event') ? ['an event run\'s events are retried with no other recipe beside them (together; interrupted again, one at a time)'] : []),
          ...(interrupted.some((r) => r.trigger !== 'event') ? ['a scheduled or manual run stays failed and is not run again'] : []),
        ]
        rt.log.warn({ runs: interrupted.map((r) => ({ recipe: r.recipe, run_id: r.id, trigger: r.trigger })) }, `recipe runs interrupted (their thread or process stopped): ${named}; ${next.join('; ')}`)
      }
    }
  }
  const prefix = `${id}:`
  // An exact prefix by substr: LIKE would need its wildcards escaped (and is case-blind on SQLite), and a range
  // compares by the column's collation, which on Postgres may skip punctuation.
  const claimedByIt = sql<string>`substr(claimed_by, 1, ${prefix.length})`
  const free = { claimed_by: null, claimed_until: null }
  await db.updateTable('webhook_events').set(free).where('status', 'in', ['pending', 'failed']).where(claimedByIt, '=', prefix).execute()
  // The queue's index leads with the recipe: its names first (a read, which never waits on or holds the lock).
  const recipes = await leadingKeys(db, 'recipe_event_fires', 'recipe')
  // A recipe's events it was running count that run as an attempt: a recipe that ends the thread (process.exit, out
  // of memory, a loop the watchdog stops) would otherwise run them again after every restart, for ever — they are
  // retried one by one, and dead after PROCESSING_MAX_ATTEMPTS, as after any failed run.
  if (recipes.length) {
    const max = rt.config.webhook.maxAttempts
    await db
      .updateTable('recipe_event_fires')
      .set((eb) => ({
        ...free,
        attempts: eb('attempts', '+', 1),
        status: eb.case().when('attempts', '>=', max - 1).then(sql.lit('dead')).else(sql.lit('failed')).end(),
        next_attempt_at: rt.clock.now() + INTERRUPTED_RETRY_MS,
        last_error: `${INTERRUPTED_ERROR_PREFIX} its processing thread or process stopped during the run (a recipe that exits, runs out of memory or never yields?); retried with no other recipe running beside it`,
      }))
      .where('recipe', 'in', recipes)
      .where('status', 'in', ['pending', 'failed'])
      .where(claimedByIt, '=', prefix)
      .execute()
  }
  // The call queue holds only calls not yet settled.
  await db.updateTable('call_queue').set(free).where(claimedByIt, '=', prefix).execute()
  await db.updateTable('mail_log').set(free).where('status', '=', 'queued').where(claimedByIt, '=', prefix).execute()
  await db.updateTable('destination_deliveries').set(free).where('status', '=', sql.lit('pending')).where(claimedByIt, '=', prefix).execute()
  await forgetPausesOf(rt, id)
  await db.deleteFrom('leases').where('owner', '=', id).execute()
  await db.deleteFrom('instances').where('id', '=', id).execute()
}

/**
 * Background work: registers the runtime, reaps at once (a restart after a kill finds its predecessor's claims)
 * and every REAP_MS; the stop unregisters it. Where a process cannot be identified (no /proc) there is nothing to
 * register and no one can be judged.
 */
export async function startInstanceRegistry(rt: Runtime): Promise<() => Promise<void>> {
  if (!processIdentity()) return async () => {}
  // Not registered (the database refused the row): if this instance is killed its claims lapse as before; it still
  // reaps others, and starting is not held up for it.
  const registered = await registerInstance(rt).catch((error: Error) => {
    rt.log.warn({ err: error.message }, 'could not register this instance; if it is killed its claims lapse on their own')
    return false
  })
  await reapDeadInstances(rt).catch((error: Error) => rt.log.warn({ err: error.message }, 'could not look for stopped instances; their claims lapse on their own'))
  const stopReaping = every(rt.clock, rt.log, 'looking for stopped instances', REAP_MS, REAP_MS, () => reapDeadInstances(rt))
  return async () => {
    await stopReaping()
    if (registered) await unregisterInstance(rt).catch(() => {})
  }
}
