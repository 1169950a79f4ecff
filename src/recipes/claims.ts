import type { Runtime } from '../runtime.ts'

/**
 * Claims that make scheduled ticks and event triggers run once across replicas: the first to insert the
 * primary key runs, everyone else sees 0 rows inserted and stands down.
 */
export async function claimTick(rt: Runtime, recipe: string, tickAt: number): Promise<boolean> {
  const result = await rt.store.db
    .insertInto('recipe_ticks')
    .values({ recipe, tick_at: tickAt, owner: rt.instanceId, claimed_at: rt.clock.now() })
    .onConflict((oc) => oc.columns(['recipe', 'tick_at']).doNothing())
    .executeTakeFirst()
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0
}

/** The newest tick anyone claimed for this recipe (epoch ms), if any. */
export async function lastClaimedTick(rt: Runtime, recipe: string): Promise<number | undefined> {
  const row = await rt.store.db
    .selectFrom('recipe_ticks')
    .select((eb) => eb.fn.max('tick_at').as('last'))
    .where('recipe', '=', recipe)
    .executeTakeFirst()
  return row?.last === null || row?.last === undefined ? undefined : Number(row.last)
}

export async function claimEventFire(rt: Runtime, recipe: string, eventId: string): Promise<boolean> {
  const result = await rt.store.db
    .insertInto('recipe_event_fires')
    .values({ recipe, event_id: eventId, fired_at: rt.clock.now() })
    .onConflict((oc) => oc.columns(['recipe', 'event_id']).doNothing())
    .executeTakeFirst()
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0
}
