import type { Runtime } from '../runtime.ts'

/** The most calls named; more are counted. */
const NAMED = 10

/**
 * The calls to `e164` already handed to the provider with a `scheduled_for` still ahead: the provider holds them, and
 * its API has no way to cancel one, so a number put on the do-not-call list now is rung all the same at that time.
 * Read where a number is added to the list, to say so (the log, the dashboard's notice) rather than let the call
 * come as a surprise.
 */
export async function scheduledWithProvider(rt: Runtime, e164: string): Promise<{ count: number; calls: Array<{ trace_id: string | null; scheduled_for: number }> }> {
  const rows = await rt.store.db
    .selectFrom('calls')
    .select(['trace_id', 'scheduled_for'])
    .where('status', '=', 'scheduled')
    .where('scheduled_for', '>', rt.clock.now())
    .where((eb) => eb.or([eb('customer_key', '=', e164), eb('customer_phone', '=', e164)]))
    .orderBy('scheduled_for')
    .execute()
  return { count: rows.length, calls: rows.slice(0, NAMED).map((r) => ({ trace_id: r.trace_id, scheduled_for: r.scheduled_for! })) }
}
