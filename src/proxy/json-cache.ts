import type { Selectable } from 'kysely'
import type { CacheEntriesTable } from '../db/schema.ts'
import type { Runtime } from '../runtime.ts'
import { STALE_MAX_MS, type CachePlan } from './cache-policy.ts'
import { createAccessTimes } from './access-times.ts'
import { invalidate, invalidatedSince, scope, scopesOf, sweepMarks } from './invalidation-marks.ts'
import { MAX_CONVERSATION_ID_LENGTH } from '../upstream/id-limits.ts'

export type CacheEntry = Selectable<CacheEntriesTable>

export interface JsonCache {
  get(key: string): Promise<CacheEntry | undefined>
  /**
   * Stores an upstream answer, unless an invalidation of its scopes came after generation `since` (read with
   * `currentGeneration` before the upstream request): that answer may predate what the invalidation announced.
   * Returns whether it was stored. `since` is left out only by writes no upstream request preceded.
   */
  put(input: { key: string; tenant: string; plan: CachePlan; status: number; headers: Record<string, string>; body: string; since?: number }): Promise<boolean>
  /** Drops an entry (the provider marked its newer answer no-store: the older one must not be served either). */
  remove(key: string): Promise<void>
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
    await sweepMarks(rt)
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
    async put({ key, tenant, plan, status, headers, body, since }) {
      const now = rt.clock.now()
      const headerText = JSON.stringify(headers)
      const size = key.length + headerText.length + Buffer.byteLength(body)
      if (size > rt.config.proxy.cacheMaxBytes / 4) return false
      // No provider id is this long (a junk path: `/v1/conversations/<kilobytes>`), and (kind, resource_id) is indexed:
      // Postgres refused the entry, and each such request logged a failed cache write.
      if (plan.resourceId !== null && plan.resourceId.length > MAX_CONVERSATION_ID_LENGTH) return false
      const scopes = scopesOf(tenant, plan)
      const outdated = () => (since === undefined ? Promise.resolve(false) : invalidatedSince(db, scopes, since))
      if (await outdated()) return false
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
      // Checked again once written: an invalidation that marked its scopes after the check above and deleted
      // before this row landed did not see it, so this row is removed here (only this write's, by stored_at:
      // a newer answer stored since is fresh). Either the mark is visible now or the delete came after the row.
      if (await outdated()) {
        await db.deleteFrom('cache_entries').where('key', '=', key).where('stored_at', '=', now).execute()
        return false
      }
      bytesSinceEvict += size
      // Checking the total costs a scan: do it after enough new bytes, or at most once a second.
      if (bytesSinceEvict > rt.config.proxy.cacheMaxBytes / 20 || now - lastEvictAt >= 1_000) await evict()
      return true
    },
    async remove(key) {
      await db.deleteFrom('cache_entries').where('key', '=', key).execute()
    },
    touch(key) {
      accessTimes.touch(key)
    },
    flushTouches,
    evict,
  }
}

/**
 * Forgets a tenant's cached 404s (`not_found`): a batch just created has the next id, which a read before it may have
 * cached as missing — served for 5 s after `POST /v1/batch-call` answered that id. Few and short-lived: all of them go.
 */
export async function forgetTenantNotFound(rt: Runtime, tenant: string): Promise<void> {
  await rt.store.db.deleteFrom('cache_entries').where('tenant', '=', tenant).where('kind', '=', 'not_found').execute()
}

/** After a call or batch is created, that tenant's lists are out of date. */
export async function invalidateTenantLists(rt: Runtime, tenant: string, kinds: Array<'conversation_list' | 'batch_list'>): Promise<void> {
  await invalidate(
    rt,
    kinds.map((kind) => scope.tenantList(tenant, kind)),
    () => rt.store.db.deleteFrom('cache_entries').where('tenant', '=', tenant).where('kind', 'in', kinds).execute(),
  )
}
