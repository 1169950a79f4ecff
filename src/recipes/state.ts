import { z } from 'zod'
import type { Runtime } from '../runtime.ts'
import { fromJson, toJson } from '../db/json.ts'
import { checkArgument } from '../utils/argument-error.ts'
import type { Effects } from '../effects.ts'

/** A recipe's persisted key/value store (kv_state, namespaced by recipe). Values are JSON. */
export interface RecipeState {
  /** The value stored under `key`, or undefined. */
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
/** A value as `set` keeps it (JSON); undefined is refused, as it cannot be told from a missing key. */
function encodeValue(k: string, value: unknown): string {
  if (value === undefined) throw new Error(`ctx.state.set("${k}", value): value is undefined; use ctx.state.delete to remove a key`)
  return toJson(value) ?? 'null'
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
      return text === null || text === undefined ? undefined : (fromJson<T>(text) ?? undefined)
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
      return row ? (fromJson<T>(row.value) ?? undefined) : undefined
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
