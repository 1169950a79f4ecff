import { sql, type Selectable } from 'kysely'
import { isNamedTargetEvent } from './provider-target.ts'
import type { Runtime } from '../runtime.ts'
import type { WebhookEventsTable } from '../db/schema.ts'
import { webhookEventSchema } from '../upstream/schemas.ts'
import { isProviderEvent, type PipelineEvent } from '../events/hooks.ts'
import { webhookMetrics } from './metrics.ts'
import { campaignOfBody } from './event-campaign.ts'
import { backoffMs } from '../utils/backoff.ts'
import { every } from '../utils/every.ts'

export { backoffMs }
import { applyReadModelBatch } from './read-model.ts'
import { enqueueDeliveries } from '../destinations/outbox.ts'
import { reviveEventFires } from '../recipes/claims.ts'
import { isRetryableConflict } from './storage-errors.ts'
import { inValues } from '../db/in-values.ts'
import { inClaimSubquery } from '../db/in-claim-subquery.ts'
import { reconciledBefore } from './reconcile.ts'

export type EventRow = Selectable<WebhookEventsTable>

/**
 * What processing reads of a claimed event. The claim returns these only, not the stored headers nor its own
 * bookkeeping: SQLite builds a RETURNING row of every column it names, and the whole row cost an event ~3 µs
 * more than these (a fifth of the claim).
 */
const CLAIMED_COLUMNS = ['event_id', 'target', 'event_type', 'conversation_id', 'trace_id', 'agent_id', 'body', 'source', 'received_at', 'status', 'attempts', 'next_attempt_at'] as const
export type ClaimedEvent = Pick<EventRow, (typeof CLAIMED_COLUMNS)[number]>

/**
 * How long a claim protects an event from other workers. Short, so the claims of a replica that crashed
 * lapse quickly; a worker renews the rest of its batch when hooks run long (`renewClaims`).
 */
export const CLAIM_MS = 10_000

export interface ProcessOutcome {
  eventId: string
  status: 'processed' | 'failed' | 'dead'
  attempts: number
  error?: string
  nextAttemptAt?: number
}


/** A payload that can never be processed: it is dead at once (retrying cannot help). */
class UnprocessableError extends Error {}

/** A stored row as the pipeline sees it: a zod-typed provider event, or a named target's JSON body. */
export function parseRow(rt: Runtime, row: ClaimedEvent): PipelineEvent {
  let json: unknown
  try {
    json = JSON.parse(row.body)
  } catch {
    throw new UnprocessableError('stored body is not JSON')
  }
  if (isNamedTargetEvent(rt, row)) {
    return { kind: 'target', eventId: row.event_id, eventType: row.event_type, target: row.target, source: 'webhook', receivedAt: row.received_at, body: json }
  }
  // The receiver takes the id and type from the body, else from the headers (and stores a numeric id as text):
  // the row's are the event's, whichever way they came. A body without them is still a call event.
  if (json !== null && typeof json === 'object' && !Array.isArray(json)) json = { ...json, event_id: row.event_id, event_type: row.event_type }
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

/**
 * The pipeline after the read model: every registered consumer, in order, with the events no earlier step
 * failed. A consumer that throws fails the batch it was given.
 */
async function runConsumers(rt: Runtime, batch: PipelineEvent[], failures: Map<string, Error>): Promise<void> {
  for (const { name, consume } of rt.hooks.list()) {
    const alive = batch.filter((e) => !failures.has(e.eventId))
    if (alive.length === 0) return
    try {
      const failed = await consume(alive)
      if (failed) for (const [id, error] of failed) failures.set(id, error)
    } catch (error) {
      const wrapped = new Error(`consumer "${name}" failed: ${(error as Error)?.message ?? String(error)}`, { cause: error })
      for (const e of alive) failures.set(e.eventId, wrapped)
    }
  }
}

/**
 * Processes claimed events — read model, then every hook, per event — and records all outcomes in one
 * transaction, guarded by the claim so a worker whose claim lapsed cannot overwrite a newer one.
 * `force` (replay) processes the event whatever its status; a replayed dead event that fails again stays dead.
 */
export async function processClaimedBatch(rt: Runtime, rows: ClaimedEvent[], claimedBy: string, options: { force?: boolean } = {}): Promise<ProcessOutcome[]> {
  const failures = new Map<string, Error>()
  let late = new Set<string>()
  const parsed: PipelineEvent[] = []
  for (const row of rows) {
    try {
      parsed.push(parseRow(rt, row))
    } catch (error) {
      failures.set(row.event_id, error as Error)
    }
  }
  // A slow batch (a busy machine, slow consumers) keeps its claim for as long as it runs: a claim that
  // lapsed mid-batch would let another replica process the same events too.
  const stopRenewing = keepClaimedWhileRunning(rt, claimedBy, rows.map((r) => r.event_id))
  try {
    for (const [id, error] of await applyReadModelBatch(rt, parsed.filter(isProviderEvent))) failures.set(id, error)
    // A webhook for an outcome reconciliation already queued: stored and read, but not run again (a replay is asked for).
    if (!options.force) late = await reconciledBefore(rt, parsed)
    for (const id of late) rt.log.info({ event_id: id }, 'webhook brings an outcome reconciliation already queued: its recipes and destinations are not run again')
    await runConsumers(rt, late.size ? parsed.filter((e) => !late.has(e.eventId)) : parsed, failures)
  } finally {
    // Never renew while the outcomes are written: on Postgres the renewal (another pooled connection) and
    // the outcome transaction would lock the same rows in different orders and deadlock.
    await stopRenewing()
  }
  return recordOutcomes(rt, rows, claimedBy, failures, { ...options, notForwarded: late })
}

/** Renews `ids`' claims every third of CLAIM_MS on the runtime's clock until the returned function is called. */
function keepClaimedWhileRunning(rt: Runtime, owner: string, ids: string[]): () => Promise<void> {
  return every(rt.clock, rt.log, 'renewing event claims', CLAIM_MS / 3, CLAIM_MS / 3, () => renewClaims(rt, owner, ids))
}

/** Records every outcome of a batch in one transaction, with the deliveries its processed events owe. */
async function recordOutcomes(rt: Runtime, rows: ClaimedEvent[], claimedBy: string, failures: Map<string, Error>, options: { force?: boolean; notForwarded?: Set<string> }): Promise<ProcessOutcome[]> {
  const metrics = webhookMetrics(rt.metrics)
  const now = rt.clock.now()
  const debug = rt.log.isLevelEnabled('debug')
  const outcomes: ProcessOutcome[] = rows.map((row) => {
    const logFor = () => rt.log.child({ event_id: row.event_id, conversation_id: row.conversation_id, trace_id: row.trace_id, agent_id: row.agent_id, campaign: campaignOfBody(row.body), event_type: row.event_type })
    const attempts = row.attempts + 1
    const error = failures.get(row.event_id)
    if (!error) {
      metrics.processed.inc({ source: row.source })
      // A replay (run at once, or queued by requeueEvent: due at 0) is not the backlog's: an event received a week ago
      // and replayed now added a week to the lag's sum and its top bucket.
      if (!options.force && Number(row.next_attempt_at) !== 0) metrics.lagSeconds.observe({ source: row.source }, Math.max(0, rt.clock.now() - row.received_at) / 1000)
      if (debug) logFor().debug({ attempts }, 'webhook event processed')
      return { eventId: row.event_id, status: 'processed', attempts }
    }
    const log = logFor()
    const message = error.message ?? String(error)
    metrics.failures.inc({ source: row.source })
    // A replay of a dead event that fails goes back to dead rather than into a retry loop nobody asked for; a replay
    // of one that was pending, failed or processed keeps the automatic retries (its attempts start again from 0): a
    // short outage during the replay must not turn an event that would have been retried into a dead one.
    if (error instanceof UnprocessableError || (options.force && row.status === 'dead') || attempts >= rt.config.webhook.maxAttempts) {
      metrics.dead.inc({ source: row.source })
      log.error({ attempts, err: message }, 'webhook event dead-lettered')
      return { eventId: row.event_id, status: 'dead', attempts, error: message }
    }
    const nextAttemptAt = now + backoffMs(attempts, rt.random.next)
    log.warn({ attempts, err: message, next_attempt_at: nextAttemptAt }, 'webhook event processing failed; will retry')
    return { eventId: row.event_id, status: 'failed', attempts, error: message, nextAttemptAt }
  })

  // Processed events share their new state but for `attempts`: one UPDATE per attempts value (almost
  // always one for the whole batch) instead of one per event.
  const processedByAttempts = new Map<number, string[]>()
  for (const o of outcomes) {
    if (o.status !== 'processed') continue
    const ids = processedByAttempts.get(o.attempts)
    if (ids) ids.push(o.eventId)
    else processedByAttempts.set(o.attempts, [o.eventId])
  }
  // A deadlock with another replica's transaction is retried here rather than left to the claims' lapse,
  // which would process the whole batch again.
  for (let attempt = 1; ; attempt++) {
    try {
      await writeOutcomes(rt, rows, claimedBy, failures, outcomes, processedByAttempts, now, options.notForwarded)
      return outcomes
    } catch (error) {
      if (attempt >= 3 || !isRetryableConflict(error)) throw error
      rt.log.warn({ events: rows.length, attempt, err: (error as Error).message }, 'recording outcomes met a conflict; trying again')
    }
  }
}

async function writeOutcomes(
  rt: Runtime,
  rows: ClaimedEvent[],
  claimedBy: string,
  failures: Map<string, Error>,
  outcomes: ProcessOutcome[],
  processedByAttempts: Map<number, string[]>,
  now: number,
  notForwarded: Set<string> = new Set(),
): Promise<void> {
  await rt.store.db.transaction().execute(async (trx) => {
    for (const [attempts, ids] of processedByAttempts) {
      await trx
        .updateTable('webhook_events')
        .set({ status: 'processed', attempts, last_error: null, processed_at: now, next_attempt_at: now, claimed_by: null, claimed_until: null })
        .where(inValues(rt.store.dialect, 'event_id', ids))
        .where('claimed_by', '=', claimedBy)
        .execute()
    }
    for (const o of outcomes) {
      if (o.status === 'processed') continue
      await trx
        .updateTable('webhook_events')
        .set({
          status: o.status,
          attempts: o.attempts,
          last_error: o.error ?? null,
          processed_at: null,
          next_attempt_at: o.nextAttemptAt ?? now,
          claimed_by: null,
          claimed_until: null,
        })
        .where('event_id', '=', o.eventId)
        .where('claimed_by', '=', claimedBy)
        .execute()
    }
    // Forwarding: the deliveries processed events owe, committed with their outcome (src/destinations).
    await enqueueDeliveries(trx, rt, rows.filter((r) => !failures.has(r.event_id) && !notForwarded.has(r.event_id)))
  })
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
export async function claimDue(rt: Runtime, owner: string, limit: number): Promise<ClaimedEvent[]> {
  const now = rt.clock.now()
  const db = rt.store.db
  const isPg = rt.store.dialect === 'postgres'
  // One index-ordered scan per status, each stopping at `limit`, merged: with `status IN (…)` the database
  // read every due row of the backlog and sorted it to pick the first `limit` — per claim.
  const arm = (status: 'pending' | 'failed') => {
    let q = db
      .selectFrom('webhook_events')
      .select(['event_id', 'next_attempt_at'])
      .where('status', '=', status)
      .where('next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
      .orderBy('next_attempt_at')
      .limit(limit)
    if (isPg) q = q.forUpdate().skipLocked()
    return q
  }
  const due = db
    .selectFrom(
      db
        .selectFrom(arm('pending').as('p'))
        .select(['p.event_id', 'p.next_attempt_at'])
        .unionAll(db.selectFrom(arm('failed').as('f')).select(['f.event_id', 'f.next_attempt_at']))
        .as('d'),
    )
    .select('d.event_id')
    .orderBy('d.next_attempt_at')
    .limit(limit)
  const rows = await db
    .updateTable('webhook_events')
    .set({ claimed_by: owner, claimed_until: now + CLAIM_MS })
    .where(inClaimSubquery(rt.store.dialect, 'event_id', due))
    // Re-checked through an expression no index serves: given `status IN (…)` SQLite chose the status
    // index and tested every pending row against the id list — a scan of the whole backlog per claim
    // (15 ms at 18,000 pending); this way each id is looked up by the primary key.
    .where((eb) => eb.fn.coalesce('status', sql.lit('')), 'in', ['pending', 'failed'])
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
    .returning(CLAIMED_COLUMNS)
    .execute()
  return rows.sort((a, b) => a.next_attempt_at - b.next_attempt_at || a.received_at - b.received_at)
}

/** Extends this owner's claims on `eventIds` (a batch whose hooks run long). */
export async function renewClaims(rt: Runtime, owner: string, eventIds: string[]): Promise<void> {
  if (eventIds.length === 0) return
  await rt.store.db
    .updateTable('webhook_events')
    .set({ claimed_until: rt.clock.now() + CLAIM_MS })
    .where(inValues(rt.store.dialect, 'event_id', eventIds))
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
  await reviveEventFires(rt, eventId)
  return processClaimed(rt, { ...row, attempts: 0 }, owner, { force: true })
}

/**
 * Puts one event back in the queue (status pending, attempts reset; a dead one's to one short of the limit, so that
 * failing again it is dead again) for the running service's worker to
 * process with every hook that service registered. Returns false when there is no such event (or, with
 * `onlyStatuses`, when it is no longer in one of them). An event a worker holds a live claim on is left to it:
 * taking it over would run its hooks twice and drop the worker's outcome (EventBusyError).
 */
export async function requeueEvent(rt: Runtime, eventId: string, options: { onlyStatuses?: readonly string[] } = {}): Promise<boolean> {
  const now = rt.clock.now()
  let update = rt.store.db
    .updateTable('webhook_events')
    // Due at once for every replica, whatever the skew between this process's clock and theirs.
    // A dead event gets one attempt: failing again, it goes back to dead rather than into a retry loop nobody asked
    // for, as a replay run at once does. Any other keeps its automatic retries.
    .set((eb) => ({
      status: 'pending',
      attempts: eb.case().when('status', '=', 'dead').then(Math.max(0, rt.config.webhook.maxAttempts - 1)).else(0).end(),
      next_attempt_at: 0,
      claimed_by: null,
      claimed_until: null,
      last_error: null,
    }))
    .where('event_id', '=', eventId)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
  if (options.onlyStatuses) update = update.where('status', 'in', [...options.onlyStatuses])
  const result = await update.executeTakeFirst()
  if (Number(result.numUpdatedRows) > 0) {
    await reviveEventFires(rt, eventId)
    return true
  }
  const row = await rt.store.db.selectFrom('webhook_events').select(['status', 'claimed_until']).where('event_id', '=', eventId).executeTakeFirst()
  if (!row || (options.onlyStatuses && !options.onlyStatuses.includes(row.status))) return false
  throw new EventBusyError(`event "${eventId}" is being processed right now; try again in a minute`)
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
