import type { Runtime } from '../runtime.ts'

export interface TenantKeys {
  /** The key was accepted upstream within the window and not refused since. */
  isConfirmed(tenant: string): Promise<boolean>
  /** The key was accepted at some time and not refused since (enough to serve STALE while upstream is down). */
  wasEverAccepted(tenant: string): Promise<boolean>
  accepted(tenant: string): Promise<void>
  rejected(tenant: string): Promise<void>
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
 * When each tenant's key was last accepted or refused by the provider, in `tenant_keys` (by hash, never
 * the key). Cached answers are served to a key only while its last acceptance is recent.
 */
export function createTenantKeys(rt: Runtime): TenantKeys {
  const db = rt.store.db
  const memo = new Map<string, Known>()
  const windowMs = () => rt.config.proxy.keyWindowSeconds * 1000

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

  async function write(tenant: string, field: 'accepted_at' | 'rejected_at', now: number): Promise<void> {
    await db
      .insertInto('tenant_keys')
      .values({ tenant, accepted_at: field === 'accepted_at' ? now : null, rejected_at: field === 'rejected_at' ? now : null })
      .onConflict((oc) => oc.column('tenant').doUpdateSet(field === 'accepted_at' ? { accepted_at: now } : { rejected_at: now }))
      .execute()
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
      if (k && good(k) && k.acceptedAt !== null && now - k.acceptedAt < Math.min(WRITE_EVERY_MS, windowMs() / 2)) return
      await write(tenant, 'accepted_at', now)
      memo.set(tenant, { acceptedAt: now, rejectedAt: k?.rejectedAt ?? null, seenAt: now })
    },
    async rejected(tenant) {
      const now = rt.clock.now()
      await write(tenant, 'rejected_at', now)
      memo.set(tenant, { acceptedAt: memo.get(tenant)?.acceptedAt ?? null, rejectedAt: now, seenAt: now })
    },
  }
}
