import { z } from 'zod'
import type { Runtime } from '../runtime.ts'
import { ArgumentError, checkArgument } from '../utils/argument-error.ts'
import type { Effects } from '../effects.ts'

/** A recipe's persisted key/value store (kv_state, namespaced by recipe). Values are JSON. */
export interface RecipeState {
  /** The value stored under `key` (null if it was set to null), or undefined when there is none. */
  get<T = unknown>(key: string): Promise<T | undefined>
  /**
   * Stores a JSON value under `key` (replacing any), kept between runs. In a dry run it is kept for the rest of the
   * run only (the run's `get` sees it) and shown in its plan: a dry run never moves a real run's cursor.
   */
  set(key: string, value: unknown): Promise<void>
  /** Removes `key` (nothing happens if it is not there). */
  delete(key: string): Promise<void>
}

/**
 * The longest key: (namespace, key) is the table's key, and Postgres refuses an index entry past ~2,700 bytes — a key
 * made of data (`seen:<a URL>`) of thousands of characters failed the write there and worked on SQLite.
 */
export const MAX_STATE_KEY_LENGTH = 512
const keySchema = z
  .string({ error: 'must be a string' })
  .min(1, { error: 'must not be empty' })
  .max(MAX_STATE_KEY_LENGTH, { error: `must be at most ${MAX_STATE_KEY_LENGTH} characters (hash a long one)` })
/**
 * What in `value` JSON cannot keep, with where (`value.seen`): JSON.stringify drops a function, turns NaN into null and
 * a Map into {}, and throws on a BigInt or a cycle — a value stored as something else than was set.
 */
function unstorable(value: unknown, path: string, open: Set<object>): string | undefined {
  switch (typeof value) {
    case 'function': return `${path} is a function`
    case 'symbol': return `${path} is a symbol`
    case 'bigint': return `${path} is a BigInt (store it as a string)`
    case 'number': return Number.isFinite(value) ? undefined : `${path} is ${value} (JSON has no such number)`
    case 'object': break
    default: return undefined
  }
  if (value === null) return undefined
  if (value instanceof Map || value instanceof Set) return `${path} is a ${value instanceof Map ? 'Map' : 'Set'} (JSON keeps it as {}: store [...${value instanceof Map ? 'map' : 'set'}] instead)`
  // A Date (toJSON) is stored as its ISO text, as JSON keeps it.
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return undefined
  if (open.has(value)) return `${path} refers back to itself (a cycle)`
  open.add(value)
  try {
    const entries: Array<[string, unknown]> = Array.isArray(value) ? value.map((v, i) => [`${path}[${i}]`, v]) : Object.entries(value).map(([k, v]) => [`${path}.${k}`, v])
    for (const [at, v] of entries) {
      const problem = unstorable(v, at, open)
      if (problem) return problem
    }
    return undefined
  } finally {
    open.delete(value)
  }
}

/** A value as `set` keeps it (JSON); undefined is refused, as it cannot be told from a missing key. */
function encodeValue(k: string, value: unknown): string {
  const fn = `ctx.state.set(key, value)`
  if (value === undefined) throw new ArgumentError(`${fn}: value is undefined (key "${k}"); use ctx.state.delete to remove a key`)
  const problem = unstorable(value, 'value', new Set())
  if (problem) throw new ArgumentError(`${fn}: ${problem} — expected a JSON value (string, number, boolean, null, array or plain object), key "${k}"`)
  return JSON.stringify(value)
}

/** A stored value: null as null (a key set to null is not a missing key). */
function decodeValue<T>(text: string): T {
  return JSON.parse(text) as T
}

const key = (fn: string, value: unknown) => checkArgument(keySchema, value, { fn: `ctx.state.${fn}`, arg: 'key', expected: 'a non-empty string key' })

/**
 * The store of `namespace`; with `effects` of a dry run, writes go to an overlay the run reads through and to its
 * plan, never to the database.
 */
export function createKvState(rt: Runtime, namespace: string, effects?: Effects): RecipeState {
  const database = createStoredState(rt, namespace)
  if (!effects?.dryRun) return database
  /** The dry run's own writes: a value as JSON, or null for a deleted key. */
  const overlay = new Map<string, string | null>()
  return {
    async get<T>(input: string) {
      const k = key('get', input)
      if (!overlay.has(k)) return database.get<T>(k)
      const text = overlay.get(k)
      return text === null || text === undefined ? undefined : decodeValue<T>(text)
    },
    async set(input, value) {
      const k = key('set', input)
      const text = encodeValue(k, value)
      overlay.set(k, text)
      effects.plan.push({ kind: 'state', action: 'set', key: k, value: text })
    },
    async delete(input) {
      const k = key('delete', input)
      overlay.set(k, null)
      effects.plan.push({ kind: 'state', action: 'delete', key: k })
    },
  }
}

function createStoredState(rt: Runtime, namespace: string): RecipeState {
  const db = rt.store.db
  return {
    async get<T>(input: string) {
      const k = key('get', input)
      const row = await db.selectFrom('kv_state').select('value').where('namespace', '=', namespace).where('key', '=', k).executeTakeFirst()
      return row ? decodeValue<T>(row.value) : undefined
    },
    async set(input, value) {
      const k = key('set', input)
      const text = encodeValue(k, value)
      const now = rt.clock.now()
      await db
        .insertInto('kv_state')
        .values({ namespace, key: k, value: text, updated_at: now })
        .onConflict((oc) => oc.columns(['namespace', 'key']).doUpdateSet({ value: text, updated_at: now }))
        .execute()
    },
    async delete(input) {
      const k = key('delete', input)
      await db.deleteFrom('kv_state').where('namespace', '=', namespace).where('key', '=', k).execute()
    },
  }
}

export function recipeStateNamespace(recipe: string): string {
  return `recipe:${recipe}`
}
