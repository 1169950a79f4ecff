import type { Runtime } from '../runtime.ts'
import type { LoadedRecipe } from './loader.ts'

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
  return {
    async refresh(recipes) {
      // Read on every (rare) reload: another replica may have recorded newer subscriptions.
      const rows = await rt.store.db.selectFrom('kv_state').select(['key', 'value']).where('namespace', '=', NAMESPACE).execute()
      const known = new Map(rows.map((r) => [r.key, r.value]))
      const result = new Map<string, readonly string[]>()
      for (const recipe of recipes) {
        if (recipe.definition) {
          const on = recipe.definition.on ?? []
          const text = JSON.stringify(on)
          if (known.get(recipe.name) !== text) {
            const now = rt.clock.now()
            await rt.store.db
              .insertInto('kv_state')
              .values({ namespace: NAMESPACE, key: recipe.name, value: text, updated_at: now })
              .onConflict((oc) => oc.columns(['namespace', 'key']).doUpdateSet({ value: text, updated_at: now }))
              .execute()
          }
          result.set(recipe.name, on)
        } else {
          const text = known.get(recipe.name)
          if (text !== undefined) result.set(recipe.name, JSON.parse(text) as string[])
        }
      }
      return result
    },
  }
}
