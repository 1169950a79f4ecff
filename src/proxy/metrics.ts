import { Counter } from 'prom-client'
import { defineMetrics } from '../utils/define-metrics.ts'

/** Proxy answers by cache result (the X-Cache header: HIT, MISS, STALE, BYPASS). */
export const proxyCacheResults = defineMetrics(
  (registers): Counter<'result'> => new Counter({ name: 'switchboard_proxy_cache_results_total', help: 'Proxy answers by X-Cache result (HIT, MISS, STALE, BYPASS)', labelNames: ['result'], registers }),
)

/** Cache misses that joined an identical request already in flight instead of making their own (src/proxy/single-flight.ts). */
export const proxyCoalesced = defineMetrics(
  (registers): Counter => new Counter({ name: 'switchboard_proxy_coalesced_total', help: 'Proxy cache misses that joined an identical request to the provider already in flight instead of making their own', registers }),
)
