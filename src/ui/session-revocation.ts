import type { Runtime } from '../runtime.ts'
import type { AdminSession } from '../utils/admin-auth.ts'

/**
 * "Log out" ends a dashboard session on the server, not only in the browser: session cookies are stateless (every
 * replica can check them), so a copy taken before the logout would otherwise stay valid until it expired. The
 * session's nonce is kept in the database, shared by every replica, until then.
 */
export async function revokeSession(rt: Runtime, session: AdminSession): Promise<void> {
  const now = rt.clock.now()
  await rt.store.db.transaction().execute(async (trx) => {
    // Ended sessions past their expiry would be refused anyway: the table holds at most 12 hours of logouts.
    await trx.deleteFrom('revoked_sessions').where('expires_at', '<=', now).execute()
    await trx
      .insertInto('revoked_sessions')
      .values({ nonce: session.nonce, expires_at: session.expiresAt })
      .onConflict((oc) => oc.column('nonce').doNothing())
      .execute()
  })
}

/** Whether a session was ended by "Log out". */
export async function isRevoked(rt: Runtime, session: AdminSession): Promise<boolean> {
  const row = await rt.store.db.selectFrom('revoked_sessions').select('nonce').where('nonce', '=', session.nonce).executeTakeFirst()
  return row !== undefined
}
