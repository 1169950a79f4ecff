import type { Runtime } from '../runtime.ts'

export interface WebhookHealth {
  received: number
  /** null: not known from the inbox alone (the receiver counts them). */
  duplicates: number | null
  rejected: Record<string, number> | null
  dead: number
  reconciled: number
  /** Where the figures came from: the receiver's own counters, or the inbox table. */
  source: 'receiver' | 'inbox'
}

type ReceiverHealth = (rt: Runtime, fromMs: number, toMs: number) => Promise<Omit<WebhookHealth, 'source'>>

/**
 * The receiver (src/webhooks) owns these figures and exports `webhookHealth`; it is looked up at run time
 * so reports work with or without it. Without it, what the inbox shows: events delivered by the provider,
 * events synthesized by reconciliation, and those dead. Duplicates and rejections leave no inbox
 * row, so they are reported as unknown rather than as zero.
 */
export async function loadWebhookHealth(rt: Runtime, fromMs: number, toMs: number): Promise<WebhookHealth> {
  const receiver = await findReceiverHealth(rt)
  if (receiver) {
    try {
      const h = await receiver(rt, fromMs, toMs)
      return { ...h, source: 'receiver' }
    } catch (error) {
      rt.log.warn({ err: error }, 'reports: webhookHealth failed; webhook health comes from the inbox')
    }
  }
  const rows = await rt.store.db
    .selectFrom('webhook_events')
    .select((eb) => ['source', 'status', eb.fn.countAll<number>().as('n')])
    .where('received_at', '>=', fromMs)
    .where('received_at', '<', toMs)
    .groupBy(['source', 'status'])
    .execute()
  let received = 0
  let dead = 0
  let reconciled = 0
  for (const r of rows) {
    const n = Number(r.n)
    if (r.status === 'dead') dead += n
    if (r.source === 'reconcile') reconciled += n
    else received += n
  }
  return { received, duplicates: null, rejected: null, dead, reconciled, source: 'inbox' }
}

let cached: Promise<ReceiverHealth | undefined> | undefined

async function findReceiverHealth(rt: Runtime): Promise<ReceiverHealth | undefined> {
  cached ??= (async () => {
    const url = new URL('../webhooks/index.ts', import.meta.url).href
    try {
      // A computed specifier: the module may not exist in this build, and that is fine.
      const mod = (await import(url)) as { webhookHealth?: unknown }
      return typeof mod.webhookHealth === 'function' ? (mod.webhookHealth as ReceiverHealth) : undefined
    } catch (error) {
      const code = (error as { code?: string }).code
      if (code !== 'ERR_MODULE_NOT_FOUND' && !/Cannot find module|Failed to load url|does not exist/i.test(String(error))) {
        rt.log.warn({ err: error }, 'reports: the webhook receiver module failed to load; webhook health comes from the inbox')
      }
      return undefined
    }
  })()
  return cached
}
