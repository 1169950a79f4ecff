import type { Updateable } from 'kysely'
import type { RecipeRunsTable } from '../db/schema.ts'
import type { Runtime } from '../runtime.ts'
import { writeAgain } from '../utils/write-again.ts'
import { RUN_STALE_MS, runOwner } from './overlap.ts'

/** How often a run whose outcome the database refused is tried again. */
export const CLOSE_RETRY_MS = 5_000

/**
 * Keeps trying to close a run whose outcome the database refused (down, read-only, its connection dropped). Until
 * then its row reads `running`, and while this process lives no other process takes it for a crashed one's: the
 * recipe's ticks and event queue would wait RUN_STALE_MS — an hour — for a run that is over. Tried again every
 * CLOSE_RETRY_MS on the runtime's clock, in the background and without keeping the process alive (a process that
 * ends is seen to have stopped, and the next look closes its run), until RUN_STALE_MS, when every process ignores
 * the row anyway. Only a row still `running` is closed: one taken over meanwhile keeps what was written.
 */
export function keepClosing(rt: Runtime, id: string, outcome: Updateable<RecipeRunsTable>): void {
  const close = () => rt.store.db.updateTable('recipe_runs').set(outcome).where('id', '=', id).where('status', '=', 'running').execute()
  // The write just failed: the first try again waits CLOSE_RETRY_MS too.
  rt.clock.setTimeout(() => {
    void writeAgain(rt.clock, close, { tries: RUN_STALE_MS / CLOSE_RETRY_MS, everyMs: CLOSE_RETRY_MS }).then(
      () => rt.log.warn({ run_id: id }, 'a recipe run whose outcome could not be written is closed as failed now that the database takes it'),
      () => {},
    )
  }, CLOSE_RETRY_MS)
}

/**
 * Closes as failed the runs of `recipe` this runtime started that still read `running`: the CLI's watchdog stopped
 * their code (src/recipes/cli-watchdog.ts), and the process ends next. A real run's row would be closed by the next
 * process to look for one in progress (its process gone), but nothing ever looks for a dry run: it read
 * `running (dry run)` until RUN_STALE_MS. Only a row still `running` is closed: an outcome written meanwhile stays.
 */
export async function closeOwnRunsLeftRunning(rt: Runtime, recipe: string, error: string): Promise<void> {
  const owner = runOwner(rt)
  if (owner === null) return
  const now = rt.clock.now()
  await rt.store.db
    .updateTable('recipe_runs')
    .set({ status: 'failed', ended_at: now, error })
    .where('recipe', '=', recipe)
    .where('started_at', '>', now - RUN_STALE_MS)
    .where('status', '=', 'running')
    .where('process', '=', owner)
    .execute()
}
