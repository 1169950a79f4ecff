import type { Runtime } from '../runtime.ts'
import { createExpiringLru } from './expiring-lru.ts'

export interface TenantKeys {
  /** The key was accepted upstream within the window and not refused since. */
  isConfirmed(tenant: string): Promise<boolean>
  /** The key was accepted at some time and not refused since (enough to serve STALE while upstream is down). */
  wasEverAccepted(tenant: string): Promise<boolean>
  accepted(tenant: string): Promise<void>
  rejected(tenant: string): Promise<void>
  /**
   * The provider refused this key within the key window and has never accepted it here: a read may be
   * answered 401 without asking again (a junk key repeated costs no upstream round trip).
   */
  recentlyRefused(tenant: string): boolean
  /** Deletes the rows of keys not seen for KEY_ROW_RETENTION_MS (and rows that never recorded an acceptance). */
  sweep(): Promise<number>
}

interface Known {
  acceptedAt: number | null
  rejectedAt: number | null
  /** When this process read or wrote the row. */
  seenAt: number
}

/** A confirmation read from the database is reused this long in-process (a refusal seen on another replica shows after it). */
const MEMO_MS = 1_000
/** Confirmations are written at most this often per tenant: the hot path should not write on every request. */
const WRITE_EVERY_MS = 5_000
/**
 * A row not written for this long is deleted. A key in use is confirmed upstream at least once per key window,
 * which writes its row, so only keys out of use go; one that comes back is confirmed again before anything
 * cached is served to it (and gets no STALE answer until then), exactly as a key never seen.
 */
export const KEY_ROW_RETENTION_MS = 30 * 24 * 60 * 60 * 1000
/** Keys refused but never accepted, remembered in memory only: every string a client sends must not cost a row. */
const REFUSED_MAX = 10_000

/**
 * When each tenant's key was last accepted or refused by the provider, in `tenant_keys` (by hash, never
 * the key). Cached answers are served to a key only while its last acceptance is recent.
 */
export function createTenantKeys(rt: Runtime): TenantKeys {
  const db = rt.store.db
  const memo = new Map<string, Known>()
  const windowMs = () => rt.config.proxy.keyWindowSeconds * 1000
  // As long as an acceptance is trusted, a refusal is: a key enabled in the meantime waits at most that long.
  const refused = createExpiringLru({ max: REFUSED_MAX, ttlMs: windowMs, now: () => rt.clock.now() })

  async function read(tenant: string): Promise<Known> {
    const now = rt.clock.now()
    const hit = memo.get(tenant)
    if (hit && now - hit.seenAt < MEMO_MS) return hit
    const row = await db.selectFrom('tenant_keys').select(['accepted_at', 'rejected_at']).where('tenant', '=', tenant).executeTakeFirst()
    const known = { acceptedAt: row?.accepted_at ?? null, rejectedAt: row?.rejected_at ?? null, seenAt: now }
    if (memo.size > 10_000) memo.clear()
    memo.set(tenant, known)
    return known
  }

  const good = (k: Known) => k.acceptedAt !== null && (k.rejectedAt === null || k.rejectedAt < k.acceptedAt)

  async function accept(tenant: string, now: number): Promise<void> {
    await db
      .insertInto('tenant_keys')
      .values({ tenant, accepted_at: now, rejected_at: null })
      .onConflict((oc) => oc.column('tenant').doUpdateSet({ accepted_at: now }))
      .execute()
  }

  /**
   * Records a refusal on the key's row, if it has one: only a key accepted at some time has one, and only its
   * refusal changes anything stored (it stops cached and STALE answers). A key never accepted gets no row
   * (an UPDATE cannot insert), so a stream of made-up keys leaves nothing behind. Returns whether it had one.
   */
  async function refuse(tenant: string, now: number): Promise<boolean> {
    const result = await db.updateTable('tenant_keys').set({ rejected_at: now }).where('tenant', '=', tenant).executeTakeFirst()
    return Number(result.numUpdatedRows) > 0
  }

  return {
    async isConfirmed(tenant) {
      const k = await read(tenant)
      return good(k) && rt.clock.now() - k.acceptedAt! <= windowMs()
    },
    async wasEverAccepted(tenant) {
      return good(await read(tenant))
    },
    async accepted(tenant) {
      const now = rt.clock.now()
      const k = memo.get(tenant)
      refused.delete(tenant)
      if (k && good(k) && k.acceptedAt !== null && now - k.acceptedAt < Math.min(WRITE_EVERY_MS, windowMs() / 2)) return
      await accept(tenant, now)
      memo.set(tenant, { acceptedAt: now, rejectedAt: k?.rejectedAt ?? null, seenAt: now })
    },
    async rejected(tenant) {
      const now = rt.clock.now()
      if (!(await refuse(tenant, now))) refused.add(tenant)
      memo.set(tenant, { acceptedAt: memo.get(tenant)?.acceptedAt ?? null, rejectedAt: now, seenAt: now })
    },
    recentlyRefused(tenant) {
      return refused.has(tenant)
    },
    async sweep() {
      const cutoff = rt.clock.now() - KEY_ROW_RETENTION_MS
      const result = await db
        .deleteFrom('tenant_keys')
        .where((eb) =>
          eb.or([
            // Written before refusals stopped making rows: a row that never recorded an acceptance says nothing.
            eb('accepted_at', 'is', null),
            eb.and([eb('accepted_at', '<', cutoff), eb.or([eb('rejected_at', 'is', null), eb('rejected_at', '<', cutoff)])]),
          ]),
        )
        .executeTakeFirst()
      memo.clear()
      return Number(result.numDeletedRows)
    },
  }
}
