import type { Runtime } from '../runtime.ts'
import { fromJson } from '../db/json.ts'
import { firstOfItsConversation } from './outbox.ts'

/**
 * Circuit-breaker pauses as the list, `/admin/destinations` and the dashboard show them. The breaker lives in each
 * replica's delivery worker (in the processing thread), so the pages, served elsewhere, read what the worker wrote
 * here when a pause began — one row per destination and replica in kv_state, under its own namespace — and the
 * worker deletes its row once a delivery goes through again. A replica killed while paused leaves its row behind:
 * a pause whose end has passed is not shown, and rows a day old are swept by the next pause written.
 */
const NAMESPACE = 'switchboard:destination-pauses'
const KEEP_ENDED_MS = 24 * 3_600_000

export interface DestinationPause {
  /** When the pause ends (epoch ms): the breaker then lets one delivery through as a probe. */
  until: number
  /** Why, in one line: the failed attempts in a row and the last one's error. */
  reason: string
}

const keyOf = (rt: Runtime, name: string) => `${name}\n${rt.instanceId}`

/** This replica paused `name` until `until`. */
export async function recordPause(rt: Runtime, name: string, pause: DestinationPause): Promise<void> {
  const now = rt.clock.now()
  const value = JSON.stringify(pause)
  await rt.store.db
    .insertInto('kv_state')
    .values({ namespace: NAMESPACE, key: keyOf(rt, name), value, updated_at: now })
    .onConflict((oc) => oc.columns(['namespace', 'key']).doUpdateSet({ value, updated_at: now }))
    .execute()
  await rt.store.db.deleteFrom('kv_state').where('namespace', '=', NAMESPACE).where('updated_at', '<', now - KEEP_ENDED_MS).execute()
}

/** This replica's pause of `name` is over (a delivery went through). */
export async function clearPause(rt: Runtime, name: string): Promise<void> {
  await rt.store.db.deleteFrom('kv_state').where('namespace', '=', NAMESPACE).where('key', '=', keyOf(rt, name)).execute()
}

/**
 * Forgets the pauses of a stopped instance (`instanceId`), as its claims are given back: its breaker stopped with it,
 * and a restart after a kill -9 delivered at once while the list, the dashboard and each pending delivery still showed
 * the destination paused (with a Resume to press) until the dead instance's pause would have ended.
 */
export async function forgetPausesOf(rt: Runtime, instanceId: string): Promise<void> {
  const rows = await rt.store.db.selectFrom('kv_state').select('key').where('namespace', '=', NAMESPACE).execute()
  const its = rows.filter((r) => r.key.slice(r.key.lastIndexOf('\n') + 1) === instanceId).map((r) => r.key)
  if (its.length) await rt.store.db.deleteFrom('kv_state').where('namespace', '=', NAMESPACE).where('key', 'in', its).execute()
}

/** The destinations some replica pauses now, each with the pause that ends last. */
export async function pausedDestinations(rt: Runtime): Promise<Map<string, DestinationPause>> {
  const now = rt.clock.now()
  const rows = await rt.store.db.selectFrom('kv_state').select(['key', 'value']).where('namespace', '=', NAMESPACE).execute()
  const paused = new Map<string, DestinationPause>()
  for (const row of rows) {
    const name = row.key.slice(0, row.key.lastIndexOf('\n'))
    let pause: Partial<DestinationPause> | null
    try {
      pause = fromJson<Partial<DestinationPause>>(row.value)
    } catch {
      continue
    }
    if (typeof pause?.until !== 'number' || typeof pause.reason !== 'string' || pause.until <= now) continue
    const known = paused.get(name)
    if (!known || known.until < pause.until) paused.set(name, { until: pause.until, reason: pause.reason })
  }
  return paused
}

/** Whether this replica's record of its pause of `name` is still there: an operator's `endPauses` removes it. */
export async function pauseStillRecorded(rt: Runtime, name: string): Promise<boolean> {
  const row = await rt.store.db.selectFrom('kv_state').select('key').where('namespace', '=', NAMESPACE).where('key', '=', keyOf(rt, name)).executeTakeFirst()
  return row !== undefined
}

/**
 * Ends every replica's pause of `name` now (`destinations enable`, a replay of its failures): each replica's worker,
 * finding its pause's record gone (within 5 s, as it reads the destinations' state), sends the next delivery as the
 * probe instead of waiting out a pause of up to 10 minutes. Whether one was paused.
 */
export async function endPauses(rt: Runtime, name: string): Promise<boolean> {
  const now = rt.clock.now()
  // By exact keys: a destination's name may hold LIKE's wildcards (`_`).
  const rows = await rt.store.db.selectFrom('kv_state').select(['key', 'value']).where('namespace', '=', NAMESPACE).execute()
  const ours = rows.filter((r) => r.key.slice(0, r.key.lastIndexOf('\n')) === name)
  if (ours.length === 0) return false
  await rt.store.db.deleteFrom('kv_state').where('namespace', '=', NAMESPACE).where('key', 'in', ours.map((r) => r.key)).execute()
  const paused = ours.some((r) => {
    try {
      const until = fromJson<Partial<DestinationPause>>(r.value)?.until
      return typeof until === 'number' && until > now
    } catch {
      return false
    }
  })
  if (paused) await probeNow(rt, name, now)
  return paused
}

/**
 * Makes the destination's next delivery due now, to go out as the probe: the worker sent "the next delivery" — due
 * at its retry, hours away on the default schedule — while the destination read `active` and sent nothing. Of an
 * ordered destination, the next delivery a claim can take: a conversation's first pending one (its later ones, due all
 * along, wait behind it — made due instead, nothing went out until the first's retry).
 */
async function probeNow(rt: Runtime, name: string, now: number): Promise<void> {
  const ordered = rt.config.destinations.list.some((d) => d.name === name && d.ordered)
  let next = rt.store.db
    .selectFrom('destination_deliveries as d')
    .select('d.id')
    .where('d.destination', '=', name)
    .where('d.status', '=', 'pending')
  if (ordered) next = next.where(firstOfItsConversation)
  const row = await next.orderBy('d.next_attempt_at').limit(1).executeTakeFirst()
  if (row) await rt.store.db.updateTable('destination_deliveries').set({ next_attempt_at: now }).where('id', '=', row.id).where('next_attempt_at', '>', now).execute()
}
