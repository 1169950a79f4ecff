import type { Runtime } from '../runtime.ts'
import { fromJson, toJson } from '../db/json.ts'

/** A recipe's persisted key/value store (kv_state, namespaced by recipe). Values are JSON. */
export interface RecipeState {
  get<T = unknown>(key: string): Promise<T | undefined>
  set(key: string, value: unknown): Promise<void>
  delete(key: string): Promise<void>
}

export function createKvState(rt: Runtime, namespace: string): RecipeState {
  const db = rt.store.db
  return {
    async get<T>(key: string) {
      const row = await db.selectFrom('kv_state').select('value').where('namespace', '=', namespace).where('key', '=', key).executeTakeFirst()
      return row ? (fromJson<T>(row.value) ?? undefined) : undefined
    },
    async set(key, value) {
      if (value === undefined) throw new Error(`state.set("${key}") needs a value; use state.delete to remove it`)
      const text = toJson(value) ?? 'null'
      const now = rt.clock.now()
      await db
        .insertInto('kv_state')
        .values({ namespace, key, value: text, updated_at: now })
        .onConflict((oc) => oc.columns(['namespace', 'key']).doUpdateSet({ value: text, updated_at: now }))
        .execute()
    },
    async delete(key) {
      await db.deleteFrom('kv_state').where('namespace', '=', namespace).where('key', '=', key).execute()
    },
  }
}

export function recipeStateNamespace(recipe: string): string {
  return `recipe:${recipe}`
}
