import type { Runtime } from '../runtime.ts'
import { chunks } from '../utils/chunks.ts'
import type { CachePlan } from './cache-policy.ts'

/**
 * Why a cache write needs more than a delete to be invalidated: a GET whose upstream request started before
 * an invalidation (a call placed, a webhook processed — possibly on another thread or replica) would store the
 * answer it got, the old one, after the delete, and serve it as a HIT until it expires. So every invalidation
 * first leaves a mark per scope it covers, in the database every writer shares, and a cache write is kept
 * only if no mark of its scopes is newer than the moment its upstream request started.
 *
 * Marks are ordered by a generation, not by each writer's clock: two processes (or one, within a
 * millisecond) cannot tell by their clocks which came first. The generation is a counter in the database,
 * kept close to the wall clock (the next one is max(now, last + 1)) so that old marks can be swept by age.
 * Marks live in kv_state under their own namespace (its convention for switchboard's own state).
 */
const NAMESPACE = 'switchboard:proxy-invalidations'
/** The row holding the latest generation handed out (`#` cannot start a scope). */
const GENERATION = '#generation'
/**
 * A mark matters only while a request that started before it can still be writing: an upstream request
 * ends within UPSTREAM_TIMEOUT_MS (its body included). Marks are kept well past that.
 */
const KEEP_MARKS_MS = 10 * 60_000
/** Scopes per statement: well under SQLite's bound-variable limit. */
const CHUNK = 200

export type Db = Runtime['store']['db']

/** The scopes an invalidation can cover. Each cache write is checked against the ones its entry is in. */
export const scope = {
  /** One tenant's lists of a kind (after it placed a call or created a batch). */
  tenantList: (tenant: string, kind: 'conversation_list' | 'batch_list') => `tenant:${tenant}:${kind}`,
  /** Every tenant's conversation lists (any webhook). */
  allConversationLists: 'kind:conversation_list',
  /** Batch entries of an agent; `null` for entries that do not name theirs (metrics), which any webhook invalidates. */
  agent: (agentId: number | null) => (agentId === null ? 'agent:none' : `agent:${agentId}`),
}

/** The scopes whose invalidation makes an entry stale (the deletes of json-cache.ts and invalidate-consumer.ts, as marks). */
export function scopesOf(tenant: string, plan: Pick<CachePlan, 'kind' | 'resourceId' | 'agentId'>): string[] {
  switch (plan.kind) {
    // Not guarded, so that processing writes a few marks per batch, not one per event (at a campaign's 1,000 events
    // a second that was 600,000 rows of marks to keep and sweep): what a read in flight could store of one
    // conversation is stale for its TTL at most — 5 s while the call is live, 60 s while its recording is awaited —
    // and a terminal answer with its recording does not change.
    case 'conversation':
    case 'not_found':
      return []
    case 'conversation_list':
      return [scope.allConversationLists, scope.tenantList(tenant, 'conversation_list')]
    case 'batch_list':
      return [scope.tenantList(tenant, 'batch_list'), scope.agent(plan.agentId)]
    case 'batch':
    case 'batch_metrics':
      return [scope.agent(plan.agentId)]
    case 'transcription':
      return []
  }
}

/** The latest generation handed out: read before an upstream request, it dates what that request may store. */
export async function currentGeneration(db: Db): Promise<number> {
  const row = await db.selectFrom('kv_state').select('updated_at').where('namespace', '=', NAMESPACE).where('key', '=', GENERATION).executeTakeFirst()
  return row ? Number(row.updated_at) : 0
}

/** A new generation, above every one handed out before (atomic: one statement). */
async function nextGeneration(db: Db, now: number): Promise<number> {
  for (let round = 0; round < 3; round++) {
    const bumped = await db
      .updateTable('kv_state')
      .set((eb) => ({ updated_at: eb.case().when('updated_at', '>=', now).then(eb('updated_at', '+', 1)).else(eb.val(now)).end() }))
      .where('namespace', '=', NAMESPACE)
      .where('key', '=', GENERATION)
      .returning('updated_at')
      .executeTakeFirst()
    if (bumped) return Number(bumped.updated_at)
    const inserted = await db
      .insertInto('kv_state')
      .values({ namespace: NAMESPACE, key: GENERATION, value: 'null', updated_at: now })
      .onConflict((oc) => oc.columns(['namespace', 'key']).doNothing())
      .executeTakeFirst()
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1) return now
  }
  throw new Error('proxy cache: no invalidation generation after repeated conflicts')
}

/**
 * Marks `scopes` invalidated, then runs `remove` (the delete of the entries they cover). In this order a
 * cache write that started earlier is either refused by the mark or, if it landed before the mark was
 * written, deleted by `remove`.
 */
export async function invalidate(rt: Runtime, scopes: readonly string[], remove: () => Promise<unknown>): Promise<void> {
  const db = rt.store.db
  const generation = await nextGeneration(db, rt.clock.now())
  for (const part of chunks([...new Set(scopes)], CHUNK)) {
    await db
      .insertInto('kv_state')
      .values(part.map((key) => ({ namespace: NAMESPACE, key, value: 'null', updated_at: generation })))
      // Never lowered: a slower invalidation with an older generation must not hide a newer one.
      .onConflict((oc) =>
        oc
          .columns(['namespace', 'key'])
          .doUpdateSet((eb) => ({ updated_at: eb.ref('excluded.updated_at') }))
          .where((eb) => eb('kv_state.updated_at', '<', eb.ref('excluded.updated_at'))),
      )
      .execute()
  }
  await remove()
}

/** Whether any of `scopes` was invalidated after generation `since`. */
export async function invalidatedSince(db: Db, scopes: readonly string[], since: number): Promise<boolean> {
  if (scopes.length === 0) return false
  const row = await db
    .selectFrom('kv_state')
    .select('key')
    .where('namespace', '=', NAMESPACE)
    .where('key', 'in', [...scopes])
    .where('updated_at', '>', since)
    .limit(1)
    .executeTakeFirst()
  return row !== undefined
}

/** Drops marks no request can still be racing with (the generation row stays). */
export async function sweepMarks(rt: Runtime): Promise<number> {
  const keep = Math.max(KEEP_MARKS_MS, 4 * rt.config.upstreamTimeoutMs)
  const result = await rt.store.db
    .deleteFrom('kv_state')
    .where('namespace', '=', NAMESPACE)
    .where('key', '!=', GENERATION)
    .where('updated_at', '<', rt.clock.now() - keep)
    .executeTakeFirst()
  return Number(result.numDeletedRows)
}
