import type { DestinationFilter } from './destinations.ts'
import { importConfigFile } from './file.ts'
import type { Config } from './load.ts'

/** The config as a worker thread receives it: cloneable, with the names of the destinations that have a filter. */
export interface ThreadConfig {
  config: Config
  filtered: string[]
}

/**
 * A thread is handed its config by structured clone, and a function cannot be cloned: a destination's `filter`
 * (a function, written in switchboard.config.ts) made `serve` fail at start-up with a DataCloneError. So the
 * filters stay behind, their destinations named; the thread loads them again from the same file
 * (`restoreFilters`).
 */
export function threadConfig(config: Config): ThreadConfig {
  const filtered = config.destinations.list.filter((d) => d.filter).map((d) => d.name)
  if (filtered.length === 0) return { config, filtered }
  const list = config.destinations.list.map(({ filter: _filter, ...rest }) => rest)
  return { config: { ...config, destinations: { ...config.destinations, list } }, filtered }
}

function filtersIn(module: unknown): Map<string, DestinationFilter> {
  const found = new Map<string, DestinationFilter>()
  const config = (module as { default?: { DESTINATIONS?: unknown } } | null)?.default
  const list = config?.DESTINATIONS
  if (!Array.isArray(list)) return found
  for (const d of list as Array<{ name?: unknown; filter?: unknown }>) {
    if (typeof d?.name === 'string' && typeof d.filter === 'function') found.set(d.name, d.filter as DestinationFilter)
  }
  return found
}

/**
 * The thread's config with its destinations' filters, loaded again from the config file the service read. A filter
 * that cannot be found there (a config built in code rather than read from a file, or a file changed in between)
 * stops the thread: forwarding every event to a destination meant to get some of them is not a fallback.
 */
export async function restoreFilters({ config, filtered }: ThreadConfig): Promise<Config> {
  if (filtered.length === 0) return config
  const filters = config.configFile ? filtersIn(await importConfigFile(config.configFile)) : new Map<string, DestinationFilter>()
  const missing = filtered.filter((name) => !filters.has(name))
  if (missing.length > 0) {
    const where = config.configFile ? `in ${config.configFile} any more` : 'in a config file (this config was built in code)'
    throw new Error(`the filter of destination ${missing.join(', ')} cannot reach the processing thread: it is not ${where}`)
  }
  const list = config.destinations.list.map((d) => (filters.has(d.name) ? { ...d, filter: filters.get(d.name)! } : d))
  return { ...config, destinations: { ...config.destinations, list } }
}
