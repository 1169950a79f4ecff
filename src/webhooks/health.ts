import type { Runtime } from '../runtime.ts'
import { isProviderTarget } from './provider-target.ts'

export interface WebhookHealth {
  /** Distinct events delivered by the provider in the window (first copies). */
  received: number
  /** Extra copies of those events. */
  duplicates: number
  /** Refused deliveries by reason (invalid_signature, stale_timestamp, too_large, …). */
  rejected: Record<string, number>
  /** Events in the window that exhausted their processing attempts. */
  dead: number
  /** Events reconciliation synthesized because no webhook had brought them. */
  reconciled: number
}

/** Webhook health between two instants (epoch ms, `[fromMs, toMs)`), for the daily report. */
export async function webhookHealth(rt: Runtime, fromMs: number, toMs: number): Promise<WebhookHealth> {
  const db = rt.store.db
  const rows = await db
    .selectFrom('webhook_events')
    .select((eb) => [
      'source',
      'target',
      eb.fn.countAll<number>().as('n'),
      eb.fn.sum<number>('duplicates').as('dups'),
      eb.fn.sum<number>(eb.case().when('status', '=', 'dead').then(1).else(0).end()).as('dead'),
    ])
    .where('received_at', '>=', fromMs)
    .where('received_at', '<', toMs)
    .groupBy(['source', 'target'])
    .execute()
  const rejectedRows = await db
    .selectFrom('webhook_rejections')
    .select((eb) => ['target', 'reason', eb.fn.sum<number>('count').as('n')])
    .where('bucket_at', '>=', fromMs - (fromMs % 60_000))
    .where('bucket_at', '<', toMs)
    .groupBy(['target', 'reason'])
    .execute()
  const health: WebhookHealth = { received: 0, duplicates: 0, rejected: {}, dead: 0, reconciled: 0 }
  // The provider's deliveries: a named target of another scheme (a CRM, a GitHub) is another sender's health.
  for (const r of rows) {
    if (r.source !== 'reconcile' && !isProviderTarget(rt, r.target)) continue
    if (r.source === 'reconcile') health.reconciled += Number(r.n)
    else {
      health.received += Number(r.n)
      health.duplicates += Number(r.dups ?? 0)
    }
    health.dead += Number(r.dead ?? 0)
  }
  // Refusals on an unknown target count: a provider pointed at a misspelled URL is this report's concern.
  for (const r of rejectedRows) {
    if (r.target !== 'unknown' && !isProviderTarget(rt, r.target)) continue
    health.rejected[r.reason] = (health.rejected[r.reason] ?? 0) + Number(r.n)
  }
  return health
}
