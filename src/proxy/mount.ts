import type { H3 } from 'h3'
import type { Runtime } from '../runtime.ts'
import { createJsonCache } from './json-cache.ts'
import { createProxy, type Proxy } from './proxy.ts'
import { createRecordingCache } from './recordings.ts'

export const PROXY_HOOK_NAME = 'proxy-cache'
/** How often the caches are swept and trimmed to their byte budgets in the background. */
export const MAINTENANCE_INTERVAL_MS = 60_000

/** Serves /v1/** from the proxy and registers its cache-invalidation hook. */
export function mountProxy(app: H3, rt: Runtime): Proxy {
  const proxy = createProxy(rt)
  app.all('/v1/**', (event) => proxy.handle(event.req, event.url))
  if (!rt.hooks.list().some((h) => h.name === PROXY_HOOK_NAME)) rt.hooks.on(PROXY_HOOK_NAME, proxy.invalidate)
  rt.onClose(() => proxy.flush().catch(() => {}))
  return proxy
}

/** Periodic sweep of expired entries and LRU trimming (puts also trim as they go). Returns a stop function. */
export function startProxyMaintenance(rt: Runtime): () => void {
  const json = createJsonCache(rt)
  const recordings = createRecordingCache(rt)
  let cancel: (() => void) | undefined
  let stopped = false
  const tick = async () => {
    try {
      await json.evict()
      await recordings.evict()
    } catch (err) {
      rt.log.warn({ err }, 'proxy cache maintenance failed')
    }
    if (!stopped) cancel = rt.clock.setTimeout(() => void tick(), MAINTENANCE_INTERVAL_MS)
  }
  cancel = rt.clock.setTimeout(() => void tick(), MAINTENANCE_INTERVAL_MS)
  return () => {
    stopped = true
    cancel?.()
  }
}
