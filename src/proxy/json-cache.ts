import type { Selectable } from 'kysely'
import type { CacheEntriesTable } from '../db/schema.ts'
import type { Runtime } from '../runtime.ts'
import { STALE_MAX_MS, type CachePlan } from './cache-policy.ts'
import { createAccessTimes } from './access-times.ts'

export type CacheEntry = Selectable<CacheEntriesTable>

export interface JsonCache {
  get(key: string): Promise<CacheEntry | undefined>
  put(input: { key: string; tenant: string; plan: CachePlan; status: number; headers: Record<string, string>; body: string }): Promise<void>
  /** Marks an entry used; written in batches (LRU order is approximate to the flush interval). */
  touch(key: string): void
  flushTouches(): Promise<void>
  /** Drops entries past their stale window, then the least recently used until under the byte budget. */
  evict(): Promise<number>
}

const CHUNK = 200

/**
 * JSON answers cached in `cache_entries`, so every replica shares them and a webhook processed on any
 * replica invalidates them for all. Entries are keyed by tenant first: no lookup ever looks across tenants.
 */
export function createJsonCache(rt: Runtime): JsonCache {
  const db = rt.store.db
  const accessTimes = createAccessTimes(rt, 'cache_entries')
  let bytesSinceEvict = 0
  let lastEvictAt = 0
  // The hot path of every HIT: compiled once, run with a new parameter (building it again costs as much as running it).
  const selectByKey = db.selectFrom('cache_entries').selectAll().where('key', '=', '').compile()
  // On SQLite the same kysely-built SQL runs as a statement prepared once (kysely prepares per query).
  const preparedByKey = rt.store.sqlite?.prepare(selectByKey.sql)

  const flushTouches = () => accessTimes.flush()

  async function evict(): Promise<number> {
    await flushTouches()
    const now = rt.clock.now()
    lastEvictAt = now
    bytesSinceEvict = 0
    const swept = await db.deleteFrom('cache_entries').where('expires_at', '<', now - STALE_MAX_MS).executeTakeFirst()
    let removed = Number(swept.numDeletedRows)
    const max = rt.config.proxy.cacheMaxBytes
    const { total } = await db
      .selectFrom('cache_entries')
      .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('size'), eb.lit(0)).as('total'))
      .executeTakeFirstOrThrow()
    let excess = Number(total) - Math.floor(max * 0.9)
    if (Number(total) <= max) return removed
    while (excess > 0) {
      const oldest = await db.selectFrom('cache_entries').select(['key', 'size']).orderBy('last_access_at', 'asc').orderBy('key').limit(CHUNK).execute()
      if (oldest.length === 0) break
      const victims: string[] = []
      for (const row of oldest) {
        if (excess <= 0) break
        victims.push(row.key)
        excess -= Number(row.size)
      }
      await db.deleteFrom('cache_entries').where('key', 'in', victims).execute()
      removed += victims.length
    }
    return removed
  }

  return {
    async get(key) {
      if (preparedByKey) return preparedByKey.get(key) as CacheEntry | undefined
      const result = await db.executeQuery<CacheEntry>({ ...selectByKey, parameters: [key] })
      return result.rows[0]
    },
    async put({ key, tenant, plan, status, headers, body }) {
      const now = rt.clock.now()
      const headerText = JSON.stringify(headers)
      const size = key.length + headerText.length + Buffer.byteLength(body)
      if (size > rt.config.proxy.cacheMaxBytes / 4) return
      const row = {
        key,
        tenant,
        kind: plan.kind,
        resource_id: plan.resourceId,
        agent_id: plan.agentId,
        status,
        headers: headerText,
        body,
        size,
        stored_at: now,
        expires_at: now + plan.ttlMs,
        last_access_at: now,
      }
      await db
        .insertInto('cache_entries')
        .values(row)
        .onConflict((oc) => oc.column('key').doUpdateSet({ ...row }))
        .execute()
      bytesSinceEvict += size
      // Checking the total costs a scan: do it after enough new bytes, or at most once a second.
      if (bytesSinceEvict > rt.config.proxy.cacheMaxBytes / 20 || now - lastEvictAt >= 1_000) await evict()
    },
    touch(key) {
      accessTimes.touch(key)
    },
    flushTouches,
    evict,
  }
}

/**
 * What a processed webhook about `conversationId` of `agentId` makes stale, for every tenant (the event
 * does not say whose key will ask next): the conversation, a cached 404 of it or its recording, the
 * conversation lists, and the agent's batches and metrics (entries of unknown agent included).
 */
export async function invalidateForConversation(rt: Runtime, conversationId: string, agentId: number | null): Promise<number> {
  const db = rt.store.db
  const result = await db
    .deleteFrom('cache_entries')
    .where((eb) =>
      eb.or([
        eb.and([eb('kind', 'in', ['conversation', 'not_found']), eb('resource_id', '=', conversationId)]),
        eb('kind', '=', 'conversation_list'),
        agentId === null
          ? eb('kind', 'in', ['batch', 'batch_list', 'batch_metrics'])
          : eb.and([
              eb('kind', 'in', ['batch', 'batch_list', 'batch_metrics']),
              eb.or([eb('agent_id', '=', agentId), eb('agent_id', 'is', null)]),
            ]),
      ]),
    )
    .executeTakeFirst()
  return Number(result.numDeletedRows)
}

/** After a call or batch is created, that tenant's lists are out of date. */
export async function invalidateTenantLists(rt: Runtime, tenant: string, kinds: Array<'conversation_list' | 'batch_list'>): Promise<void> {
  await rt.store.db.deleteFrom('cache_entries').where('tenant', '=', tenant).where('kind', 'in', kinds).execute()
}
