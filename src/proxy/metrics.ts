import { Counter, type Registry } from 'prom-client'

const cache = new WeakMap<Registry, Counter<'result'>>()

/** Proxy answers by cache result (the X-Cache header: HIT, MISS, STALE, BYPASS). */
export function proxyCacheResults(registry: Registry): Counter<'result'> {
  let counter = cache.get(registry)
  if (!counter) {
    counter = new Counter({ name: 'switchboard_proxy_cache_results_total', help: 'Proxy answers by X-Cache result (HIT, MISS, STALE, BYPASS)', labelNames: ['result'], registers: [registry] })
    cache.set(registry, counter)
  }
  return counter
}
