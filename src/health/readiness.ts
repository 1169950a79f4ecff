import { isMigrated } from '../db/connect.ts'
import type { Runtime } from '../runtime.ts'
import { webhookState } from '../webhooks/state.ts'
import { checkDependencies, databaseAnswersNow, describeStatus, ProbeTimeoutError, withTimeout } from './dependencies.ts'

/** How long a failed commit keeps /readyz unavailable without a newer delivery to tell (the provider backs off). */
const STORAGE_TROUBLE_SHOWN_MS = 60_000

export interface Readiness {
  /** 503 when the database is down or not migrated; 200 otherwise (also when degraded). */
  httpStatus: 200 | 503
  body: Record<string, unknown>
}

/**
 * `/readyz`. Without its database the service cannot accept a webhook, so it is not ready (a load
 * balancer should send deliveries elsewhere). A relay or provider outage does not stop the receiver:
 * the service stays ready and says `degraded`, naming what is down — mail waits in the outbox and the
 * proxy serves stale cache meanwhile. A provider not called lately is `unknown`, which is not degraded:
 * no evidence is not an outage.
 */
export async function readiness(rt: Runtime): Promise<Readiness> {
  const dependencies = await checkDependencies(rt)
  const shown = Object.fromEntries(Object.entries(dependencies).map(([n, s]) => [n, describeStatus(s)]))
  const database = dependencies.database
  if (database?.state !== 'up') {
    return { httpStatus: 503, body: { status: 'unavailable', error: (database?.state === 'down' ? database.error : undefined) ?? 'database down', dependencies: shown } }
  }
  try {
    // Bounded as the probe is: a lock on the migrations' table (a migration under way elsewhere) held /readyz with it.
    if (!(await withTimeout(isMigrated(rt.store), 'the database (reading its migrations)'))) return { httpStatus: 503, body: { status: 'unavailable', error: 'migrations pending', dependencies: shown } }
  } catch (error) {
    // The probe's answer is a few seconds old: the database that does not answer now is not shown `up` beside it, and
    // the reason names what holds it — the migrations' table is seldom what is locked.
    const said = (error as Error).message
    const message = error instanceof ProbeTimeoutError ? `${said}: a lock on a table (ALTER TABLE, VACUUM FULL, LOCK TABLE) or every connection busy holds its queries` : said
    return { httpStatus: 503, body: { status: 'unavailable', error: message, dependencies: { ...shown, database: `down: ${message}` } } }
  }
  // The database answers a probe, yet the receiver could not commit its last webhook (a full disk: reads work, writes
  // do not): not ready, so a load balancer or an operator's check sees what the provider sees — 503s.
  const state = webhookState(rt)
  let trouble = state.storageTrouble
  // A commit that failed because the database was unreachable: once it answers a probe again (taken now, not the
  // cached one), a delivery would be stored — Postgres back after a restart or a failover. Kept, it held every replica
  // "unavailable" for a minute with nothing sent to clear it (a load balancer following /readyz sends nothing).
  if (trouble?.probeSees && (await databaseAnswersNow(rt))) {
    if (state.storageTrouble === trouble) state.storageTrouble = undefined
    trouble = undefined
  }
  if (trouble && rt.clock.now() - trouble.at < STORAGE_TROUBLE_SHOWN_MS) {
    return { httpStatus: 503, body: { status: 'unavailable', error: `the last webhook could not be stored (${trouble.error}); deliveries are answered 503 until one is`, dependencies: shown } }
  }
  const degraded = Object.values(dependencies).some((s) => s.state === 'down')
  return { httpStatus: 200, body: { status: degraded ? 'degraded' : 'ready', database: rt.store.dialect, dependencies: shown } }
}
