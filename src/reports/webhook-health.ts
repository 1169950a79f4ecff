import { isProviderTarget } from '../webhooks/provider-target.ts'
import type { Runtime } from '../runtime.ts'
import { webhookHealth } from '../webhooks/index.ts'

export interface WebhookHealth {
  /** Distinct events the provider delivered in the window. */
  received: number
  /** Extra copies of those events; null when unknown. */
  duplicates: number | null
  /** Refused deliveries by reason; null when unknown. */
  rejected: Record<string, number> | null
  dead: number
  /** Events reconciliation synthesized because no webhook brought them. */
  reconciled: number
  /** Where the figures came from: the receiver's counters, or (when those fail) the inbox table alone. */
  source: 'receiver' | 'inbox'
}

/**
 * Webhook health for [fromMs, toMs) from the receiver (src/webhooks `webhookHealth`). If that fails, the
 * report still goes out with what the inbox table shows — received, reconciled, dead — and duplicates and
 * rejections as unknown (null), never as a misleading zero.
 */
export async function loadWebhookHealth(rt: Runtime, fromMs: number, toMs: number): Promise<WebhookHealth> {
  try {
    return { ...(await webhookHealth(rt, fromMs, toMs)), source: 'receiver' }
  } catch (error) {
    rt.log.warn({ err: error }, 'reports: webhookHealth failed; webhook health comes from the inbox table')
  }
  const rows = await rt.store.db
    .selectFrom('webhook_events')
    .select((eb) => ['source', 'target', 'status', eb.fn.countAll<number>().as('n')])
    .where('received_at', '>=', fromMs)
    .where('received_at', '<', toMs)
    .groupBy(['source', 'target', 'status'])
    .execute()
  let received = 0
  let dead = 0
  let reconciled = 0
  for (const r of rows) {
    // The provider's events only, as the receiver's figures (a named target of another scheme is another sender).
    if (r.source !== 'reconcile' && !isProviderTarget(rt, r.target)) continue
    const n = Number(r.n)
    if (r.status === 'dead') dead += n
    if (r.source === 'reconcile') reconciled += n
    else received += n
  }
  return { received, duplicates: null, rejected: null, dead, reconciled, source: 'inbox' }
}
