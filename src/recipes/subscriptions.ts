import { fromJson } from '../db/json.ts'
import type { Runtime } from '../runtime.ts'
import type { LoadedRecipe } from './loader.ts'
import { createKvState } from './state.ts'

const NAMESPACE = 'switchboard:recipe-subscriptions'

/**
 * Which events each recipe is subscribed to (`on`), remembered in kv_state from its last successful load.
 * A recipe file that stops loading (a syntax error mid-edit, a throw at import) keeps getting its events
 * queued under the subscriptions it last had, and runs them once it is fixed: events that arrive while it
 * is broken are not lost to it. A recipe never loaded on this database has none to fall back on.
 */
export interface RecipeSubscriptions {
  /** Records the subscriptions of the recipes that loaded; returns every recipe's own or last known ones. */
  refresh(recipes: LoadedRecipe[]): Promise<Map<string, readonly string[]>>
}

export function createRecipeSubscriptions(rt: Runtime): RecipeSubscriptions {
  const state = createKvState(rt, NAMESPACE)
  return {
    async refresh(recipes) {
      // Read on every (rare) reload, all at once: another replica may have recorded newer subscriptions.
      const rows = await rt.store.db.selectFrom('kv_state').select(['key', 'value']).where('namespace', '=', NAMESPACE).execute()
      const known = new Map(rows.map((r) => [r.key, fromJson<string[]>(r.value) ?? []]))
      const result = new Map<string, readonly string[]>()
      for (const recipe of recipes) {
        const on = recipe.definition ? (recipe.definition.on ?? []) : known.get(recipe.name)
        if (recipe.definition && JSON.stringify(known.get(recipe.name)) !== JSON.stringify(on)) await state.set(recipe.name, on)
        if (on) result.set(recipe.name, on)
      }
      return result
    },
  }
}
