import type { Runtime } from '../runtime.ts'
import { deleteInChunks } from '../db/delete-in-chunks.ts'
import { deleteDeliveryChunk } from './delete-deliveries.ts'

/** `discardDestination` was asked for a destination still in DESTINATIONS: its deliveries are live. */
export class DestinationStillConfiguredError extends Error {
  override readonly name = 'DestinationStillConfiguredError'
}

export interface DiscardResult {
  /** Deliveries deleted, whatever their status (pending, delivered, dead). */
  deliveries: number
  /** Their attempt logs. */
  attempts: number
}

/** Why `name`'s deliveries may not be discarded — it is in DESTINATIONS, so they are live — or undefined. */
export function stillConfigured(rt: Runtime, name: string): string | undefined {
  if (!rt.config.destinations.list.some((d) => d.name === name)) return undefined
  return `destination "${name}" is in DESTINATIONS: remove it from the configuration (and restart) before discarding its deliveries`
}

/**
 * Deletes every delivery kept for a destination that is no longer in DESTINATIONS — the ones still pending, which
 * nothing sends any more and the retention purge never removes (they would hold its backlog gauges up for ever), and
 * its delivered and dead ones — with their attempts and its stored state (a 410's disabled mark). The name is a
 * destination's identity (its `webhook-id`s derive from it), so a renamed destination does not inherit them: drain
 * or replay before renaming. Refused while the name is configured. Event bodies no delivery refers to any more go
 * with the retention purge. In chunks paced like the purges' (a running service's commits go between them), each
 * delivery with its attempts in one transaction.
 */
export async function discardDestination(rt: Runtime, name: string): Promise<DiscardResult> {
  const configured = stillConfigured(rt, name)
  if (configured) throw new DestinationStillConfiguredError(configured)
  const db = rt.store.db
  const ofDestination = (q: typeof db, limit: number) => q.selectFrom('destination_deliveries').select('id').where('destination', '=', name).limit(limit)
  let attempts = 0
  let deliveries = 0
  // A run stops at its deadline (the purges' 50 minutes) with rows left: a discard goes on until none is, and only then
  // forgets the destination's state — it was deleted with deliveries still kept.
  for (let more = true; more; ) {
    const run = await deleteInChunks(async (limit) => {
      // On Postgres, rows a replica still sending under an older configuration holds are skipped (run it again after).
      const chunk = await deleteDeliveryChunk(rt, ofDestination, limit)
      attempts += chunk.attempts
      return chunk.deliveries
    })
    deliveries += run.rows
    more = run.more
  }
  await db.deleteFrom('destination_state').where('name', '=', name).execute()
  return { deliveries, attempts }
}
