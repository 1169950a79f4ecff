import type { Registry } from 'prom-client'

/**
 * A feature's Prometheus metrics, created the first time they are asked for on a registry and the same objects
 * every time after: prom-client refuses a second metric of the same name on one registry, while each runtime (a
 * test's, the processing thread's) has a registry of its own. `create` gets the `registers` option to pass on.
 */
export function defineMetrics<T>(create: (registers: Registry[]) => T): (registry: Registry) => T {
  const created = new WeakMap<Registry, T>()
  return (registry) => {
    let metrics = created.get(registry)
    if (metrics === undefined) {
      metrics = create([registry])
      created.set(registry, metrics)
    }
    return metrics
  }
}
