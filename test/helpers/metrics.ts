import type { Runtime } from '../../src/runtime.ts'

/** A metric's value summed over its labels, from the runtime's registry (0 when it has none yet). */
export async function metricTotal(rt: Runtime, name: string): Promise<number> {
  const metric = (await rt.metrics.getMetricsAsJSON()).find((m) => m.name === name)
  return (metric?.values ?? []).reduce((s, v) => s + Number(v.value), 0)
}
