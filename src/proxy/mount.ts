import type { H3 } from 'h3'
import type { Runtime } from '../runtime.ts'
import { createJsonCache } from './json-cache.ts'
import { createProxy, type Proxy } from './proxy.ts'
import { createRecordingCache } from './recordings.ts'
import { createTenantKeys } from './tenant-keys.ts'
import { proxyCacheResults, proxyCoalesced } from './metrics.ts'
import { upstreamMetrics } from '../upstream/metrics.ts'

/** How often the caches are swept and trimmed to their byte budgets in the background. */
export const MAINTENANCE_INTERVAL_MS = 60_000

/** Serves /v1/** from the proxy (its cache invalidation is a pipeline consumer: src/pipeline.ts). */
export function mountProxy(app: H3, rt: Runtime): Proxy {
  const proxy = createProxy(rt)
  const results = proxyCacheResults(rt.metrics)
  // Listed by /metrics from the start (each X-Cache result and the coalesced count at 0), not from the first answer,
  // coalesced miss or provider request: a hit-rate alert divides by series that must exist.
  for (const result of ['HIT', 'MISS', 'STALE', 'BYPASS']) results.inc({ result }, 0)
  proxyCoalesced(rt.metrics)
  upstreamMetrics(rt.metrics)
  app.all('/v1/**', async (event) => {
    const reply = await proxy.handle(event.req, event.url)
    results.inc({ result: reply.headers.get('x-cache') ?? 'BYPASS' })
    return reply
  })
  rt.onClose(() => proxy.flush().catch(() => {}))
  return proxy
}

/**
 * Periodic sweep of expired entries and LRU trimming (puts also trim as they go), of recording downloads a killed
 * process left half-written, and of `tenant_keys` rows of keys out of use (KEY_ROW_RETENTION_MS). Returns a stop function.
 */
export function startProxyMaintenance(rt: Runtime): () => void {
  const json = createJsonCache(rt)
  const recordings = createRecordingCache(rt)
  const keys = createTenantKeys(rt)
  let cancel: (() => void) | undefined
  let stopped = false
  const tick = async () => {
    try {
      await json.evict()
      await recordings.evict()
      await recordings.sweepAbandoned()
      await keys.sweep()
    } catch (err) {
      // One line, as the other background loops log theirs: the stack is switchboard's, not news to the operator.
      rt.log.warn({ err: (err as Error).message }, 'proxy cache maintenance failed; tried again in a minute')
    }
    if (!stopped) cancel = rt.clock.setTimeout(() => void tick(), MAINTENANCE_INTERVAL_MS)
  }
  cancel = rt.clock.setTimeout(() => void tick(), MAINTENANCE_INTERVAL_MS)
  return () => {
    stopped = true
    cancel?.()
  }
}
