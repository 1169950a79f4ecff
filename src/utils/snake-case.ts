const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)

/**
 * The same value with every object key in snake_case (`connectRate` → `connect_rate`), for --json output:
 * every JSON switchboard prints or serves uses snake_case. Keys already in snake_case stay as they are.
 */
export function snakeCaseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeCaseKeys)
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [snake(k), snakeCaseKeys(v)]))
}
