import type { Selectable } from 'kysely'
import type { Runtime } from '../runtime.ts'
import type { WebhookEventsTable } from '../db/schema.ts'
import { webhookEventSchema } from '../upstream/schemas.ts'
import type { ProcessedEvent } from './hooks.ts'
import { webhookMetrics } from './metrics.ts'
import { applyEventInTransaction } from './read-model.ts'

export type EventRow = Selectable<WebhookEventsTable>

/**
 * How long a claim protects an event from other workers. Short, so the claims of a replica that crashed
 * lapse quickly; a worker renews the rest of its batch when hooks run long (`renewClaims`).
 */
export const CLAIM_MS = 10_000
const BACKOFF_BASE_MS = 2_000
const BACKOFF_MAX_MS = 15 * 60_000

export interface ProcessOutcome {
  eventId: string
  status: 'processed' | 'failed' | 'dead'
  attempts: number
  error?: string
  nextAttemptAt?: number
}

/** Delay before attempt `attempts + 1`: exponential, capped, with jitter so replicas do not align. */
export function backoffMs(attempts: number, random: () => number): number {
  const base = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, attempts - 1))
  return Math.round(base * (0.75 + random() * 0.5))
}

/** A payload that can never be processed: it is dead at once (retrying cannot help). */
class UnprocessableError extends Error {}

function parseRow(row: EventRow): ProcessedEvent {
  let json: unknown
  try {
    json = JSON.parse(row.body)
  } catch {
    throw new UnprocessableError('stored body is not JSON')
  }
  const parsed = webhookEventSchema.safeParse(json)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new UnprocessableError(`not a call event this version understands: ${issue ? `${issue.path.join('.') || 'body'}: ${issue.message}` : 'invalid'}`)
  }
  return {
    eventId: row.event_id,
    eventType: row.event_type,
    target: row.target,
    source: row.source === 'reconcile' ? 'reconcile' : 'webhook',
    receivedAt: row.received_at,
    event: parsed.data,
  }
}

async function runHooks(rt: Runtime, processed: ProcessedEvent): Promise<void> {
  for (const { name, hook } of rt.hooks.list()) {
    try {
      await hook(processed)
    } catch (error) {
      throw new Error(`hook "${name}" failed: ${(error as Error)?.message ?? String(error)}`, { cause: error })
    }
  }
}

/**
 * Applies the read-model updates of several events in one transaction — one commit (one fsync on
 * SQLite) per batch instead of one per event — in conversation order, so replicas locking rows on
 * Postgres always lock in the same order. If the batch fails, each event is retried on its own so one
 * bad event cannot hold back the others. Returns the error of each event that failed.
 */
async function applyReadModel(rt: Runtime, items: ProcessedEvent[]): Promise<Map<string, Error>> {
  const errors = new Map<string, Error>()
  if (items.length === 0) return errors
  const ordered = [...items].sort((a, b) => (a.event.data.call.conversation_id < b.event.data.call.conversation_id ? -1 : 1))
  const now = rt.clock.now()
  try {
    await rt.store.db.transaction().execute(async (trx) => {
      for (const p of ordered) await applyEventInTransaction(trx, rt.store.dialect, p.event, p.source, p.receivedAt, now)
    })
    return errors
  } catch {
    for (const p of ordered) {
      try {
        await rt.store.db.transaction().execute((trx) => applyEventInTransaction(trx, rt.store.dialect, p.event, p.source, p.receivedAt, now))
      } catch (error) {
        errors.set(p.eventId, error as Error)
      }
    }
    return errors
  }
}

/**
 * Processes claimed events — read model, then every hook, per event — and records all outcomes in one
 * transaction, guarded by the claim so a worker whose claim lapsed cannot overwrite a newer one.
 * `force` (replay) ignores the attempt budget and never schedules a retry.
 */
export async function processClaimedBatch(rt: Runtime, rows: EventRow[], claimedBy: string, options: { force?: boolean } = {}): Promise<ProcessOutcome[]> {
  const metrics = webhookMetrics(rt.metrics)
  const failures = new Map<string, Error>()
  const parsed = new Map<string, ProcessedEvent>()
  for (const row of rows) {
    try {
      parsed.set(row.event_id, parseRow(row))
    } catch (error) {
      failures.set(row.event_id, error as Error)
    }
  }
  for (const [id, error] of await applyReadModel(rt, [...parsed.values()])) failures.set(id, error)
  let renewedAt = rt.clock.now()
  for (const [i, row] of rows.entries()) {
    const p = parsed.get(row.event_id)
    if (!p || failures.has(row.event_id)) continue
    if (rt.clock.now() - renewedAt > CLAIM_MS / 3) {
      // Slow hooks: keep the rest of the batch claimed.
      renewedAt = rt.clock.now()
      await renewClaims(rt, claimedBy, rows.slice(i).map((r) => r.event_id)).catch(() => {})
    }
    try {
      await runHooks(rt, p)
    } catch (error) {
      failures.set(row.event_id, error as Error)
    }
  }

  const now = rt.clock.now()
  const outcomes: ProcessOutcome[] = rows.map((row) => {
    const log = rt.log.child({ event_id: row.event_id, conversation_id: row.conversation_id, trace_id: row.trace_id, event_type: row.event_type })
    const attempts = row.attempts + 1
    const error = failures.get(row.event_id)
    if (!error) {
      metrics.processed.inc({ source: row.source })
      log.debug({ attempts }, 'webhook event processed')
      return { eventId: row.event_id, status: 'processed', attempts }
    }
    const message = error.message ?? String(error)
    metrics.failures.inc({ source: row.source })
    if (error instanceof UnprocessableError || options.force || attempts >= rt.config.webhook.maxAttempts) {
      // A forced replay that fails goes back to dead rather than into a retry loop nobody asked for.
      metrics.dead.inc({ source: row.source })
      log.error({ attempts, err: message }, 'webhook event dead-lettered')
      return { eventId: row.event_id, status: 'dead', attempts, error: message }
    }
    const nextAttemptAt = now + backoffMs(attempts, rt.random.next)
    log.warn({ attempts, err: message, next_attempt_at: nextAttemptAt }, 'webhook event processing failed; will retry')
    return { eventId: row.event_id, status: 'failed', attempts, error: message, nextAttemptAt }
  })

  await rt.store.db.transaction().execute(async (trx) => {
    for (const o of outcomes) {
      await trx
        .updateTable('webhook_events')
        .set({
          status: o.status,
          attempts: o.attempts,
          last_error: o.error ?? null,
          processed_at: o.status === 'processed' ? now : null,
          next_attempt_at: o.nextAttemptAt ?? now,
          claimed_by: null,
          claimed_until: null,
        })
        .where('event_id', '=', o.eventId)
        .where('claimed_by', '=', claimedBy)
        .execute()
    }
  })
  return outcomes
}

/** One claimed event (replay). */
export async function processClaimed(rt: Runtime, row: EventRow, claimedBy: string, options: { force?: boolean } = {}): Promise<ProcessOutcome> {
  const [outcome] = await processClaimedBatch(rt, [row], claimedBy, options)
  return outcome!
}

/**
 * Claims up to `limit` due events (pending, or failed and due for retry) for `owner`: one atomic
 * UPDATE … WHERE that re-checks the claim, with FOR UPDATE SKIP LOCKED on Postgres so replicas never
 * wait on or steal each other's rows.
 */
export async function claimDue(rt: Runtime, owner: string, limit: number): Promise<EventRow[]> {
  const now = rt.clock.now()
  const db = rt.store.db
  const isPg = rt.store.dialect === 'postgres'
  let due = db
    .selectFrom('webhook_events')
    .select('event_id')
    .where('status', 'in', ['pending', 'failed'])
    .where('next_attempt_at', '<=', now)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
    .orderBy('next_attempt_at')
    .limit(limit)
  if (isPg) due = due.forUpdate().skipLocked()
  const rows = await db
    .updateTable('webhook_events')
    .set({ claimed_by: owner, claimed_until: now + CLAIM_MS })
    .where('event_id', 'in', due)
    .where('status', 'in', ['pending', 'failed'])
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
    .returningAll()
    .execute()
  return rows.sort((a, b) => a.next_attempt_at - b.next_attempt_at || a.received_at - b.received_at)
}

/** Extends this owner's claims on `eventIds` (a batch whose hooks run long). */
export async function renewClaims(rt: Runtime, owner: string, eventIds: string[]): Promise<void> {
  if (eventIds.length === 0) return
  await rt.store.db
    .updateTable('webhook_events')
    .set({ claimed_until: rt.clock.now() + CLAIM_MS })
    .where('event_id', 'in', eventIds)
    .where('claimed_by', '=', owner)
    .execute()
}

/** Claims one event whatever its status (replay); undefined if missing or claimed by a live worker. */
export async function claimOne(rt: Runtime, eventId: string, owner: string): Promise<EventRow | undefined> {
  const now = rt.clock.now()
  return rt.store.db
    .updateTable('webhook_events')
    .set({ claimed_by: owner, claimed_until: now + CLAIM_MS })
    .where('event_id', '=', eventId)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
    .returningAll()
    .executeTakeFirst()
}

export class EventNotFoundError extends Error {
  override readonly name = 'EventNotFoundError'
}
export class EventBusyError extends Error {
  override readonly name = 'EventBusyError'
}

/** Re-runs one stored event now, in this process, whatever its status (`events replay`, admin replay). */
export async function replayEvent(rt: Runtime, eventId: string): Promise<ProcessOutcome> {
  const owner = `${rt.instanceId}:replay`
  const row = await claimOne(rt, eventId, owner)
  if (!row) {
    const exists = await rt.store.db.selectFrom('webhook_events').select('event_id').where('event_id', '=', eventId).executeTakeFirst()
    if (!exists) throw new EventNotFoundError(`no webhook event with id "${eventId}"`)
    throw new EventBusyError(`event "${eventId}" is being processed right now; try again in a minute`)
  }
  rt.log.info({ event_id: eventId, conversation_id: row.conversation_id, trace_id: row.trace_id, previous_status: row.status }, 'replaying webhook event')
  return processClaimed(rt, { ...row, attempts: 0 }, owner, { force: true })
}

/**
 * Puts one event back in the queue (status pending, attempts reset) for the running service's worker to
 * process with every hook that service registered. Returns false when there is no such event.
 */
export async function requeueEvent(rt: Runtime, eventId: string): Promise<boolean> {
  // Due at once for every replica, whatever the skew between this process's clock and theirs.
  const result = await rt.store.db
    .updateTable('webhook_events')
    .set({ status: 'pending', attempts: 0, next_attempt_at: 0, claimed_by: null, claimed_until: null, last_error: null })
    .where('event_id', '=', eventId)
    .executeTakeFirst()
  return Number(result.numUpdatedRows) > 0
}

/** Processes every due event in this process until none is left (CLI, tests, start-up catch-up). */
export async function drainDue(rt: Runtime, options: { owner?: string; batch?: number; maxRounds?: number } = {}): Promise<ProcessOutcome[]> {
  const owner = options.owner ?? `${rt.instanceId}:drain`
  const outcomes: ProcessOutcome[] = []
  for (let round = 0; round < (options.maxRounds ?? 10_000); round++) {
    const rows = await claimDue(rt, owner, options.batch ?? 50)
    if (rows.length === 0) break
    outcomes.push(...(await processClaimedBatch(rt, rows, owner)))
  }
  return outcomes
}
