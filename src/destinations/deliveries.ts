import type { Selectable } from 'kysely'
import type { DestinationAttemptsTable } from '../db/schema.ts'
import type { Runtime } from '../runtime.ts'
import { defineProcessingTask } from '../coordination/processing-task.ts'
import { DELIVERY_COLUMNS, eventBody, orderedFlag, type DeliveryRow } from './outbox.ts'
import { disabledDestinations } from './state.ts'
import { shownUrl } from '../utils/shown-url.ts'

/** Reading the outbox and putting deliveries back in it (CLI, admin routes). */

export const DELIVERY_STATUSES = ['pending', 'delivered', 'dead'] as const

export interface DeliveryView {
  id: string
  destination: string
  event_id: string
  event_type: string
  conversation_id: string | null
  status: string
  attempts: number
  next_attempt_at: string | null
  last_status: number | null
  last_error: string | null
  created_at: string
  delivered_at: string | null
}

export type AttemptView = Omit<Selectable<DestinationAttemptsTable>, 'started_at'> & { started_at: string }

const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString())

function view(row: Omit<DeliveryRow, 'payload'>): DeliveryView {
  return {
    id: row.id,
    destination: row.destination,
    event_id: row.event_id,
    event_type: row.event_type,
    conversation_id: row.conversation_id,
    status: row.status,
    attempts: row.attempts,
    next_attempt_at: row.status === 'pending' ? iso(row.next_attempt_at) : null,
    last_status: row.last_status,
    last_error: row.last_error,
    created_at: iso(row.created_at)!,
    delivered_at: iso(row.delivered_at),
  }
}

export interface DeliveryFilter {
  destination?: string
  status?: string
  since?: number
  until?: number
  limit?: number
}

export async function listDeliveries(rt: Runtime, filter: DeliveryFilter = {}): Promise<DeliveryView[]> {
  // Every column but the body: a list never shows it.
  let q = rt.store.db.selectFrom('destination_deliveries').select(DELIVERY_COLUMNS)
  if (filter.destination) q = q.where('destination', '=', filter.destination)
  if (filter.status) q = q.where('status', '=', filter.status)
  if (filter.since !== undefined) q = q.where('created_at', '>=', filter.since)
  if (filter.until !== undefined) q = q.where('created_at', '<', filter.until)
  const rows = await q.orderBy('created_at', 'desc').orderBy('id').limit(Math.min(filter.limit ?? 100, 10_000)).execute()
  return rows.map(view)
}

/** One delivery with every attempt (status, latency, first KB of the response). */
export async function getDelivery(rt: Runtime, id: string): Promise<(DeliveryView & { payload: unknown; attempt_log: AttemptView[] }) | undefined> {
  const row = await rt.store.db
    .selectFrom('destination_deliveries')
    .select(DELIVERY_COLUMNS)
    .select((eb) => eventBody(eb).as('body'))
    .where('id', '=', id)
    .executeTakeFirst()
  if (!row) return undefined
  const attempts = await rt.store.db.selectFrom('destination_attempts').selectAll().where('delivery_id', '=', id).orderBy('attempt').execute()
  let payload: unknown = row.body
  try {
    payload = JSON.parse(row.body)
  } catch {
    // kept as text
  }
  return { ...view(row), payload, attempt_log: attempts.map((a) => ({ ...a, started_at: iso(a.started_at)! })) }
}

export class DeliveryNotFoundError extends Error {
  override readonly name = 'DeliveryNotFoundError'
}
export class DeliveryBusyError extends Error {
  override readonly name = 'DeliveryBusyError'
}

/**
 * Puts one delivery (any status) back in the queue with a fresh retry schedule, due at once for every
 * replica; the running service's worker sends it with the same `webhook-id`.
 */
export async function replayDelivery(rt: Runtime, id: string): Promise<void> {
  const now = rt.clock.now()
  const result = await rt.store.db
    .updateTable('destination_deliveries')
    // In its conversation's order if its destination orders now (it may not have when the row was written).
    .set({ status: 'pending', round_attempts: 0, next_attempt_at: 0, claimed_by: null, claimed_until: null, delivered_at: null, ordered: orderedFlag(rt) })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
    .executeTakeFirst()
  if (Number(result.numUpdatedRows) > 0) return
  const exists = await rt.store.db.selectFrom('destination_deliveries').select('id').where('id', '=', id).executeTakeFirst()
  if (!exists) throw new DeliveryNotFoundError(`no delivery with id "${id}" (see: destinations deliveries)`)
  throw new DeliveryBusyError(`delivery "${id}" is being sent right now; try again in a minute`)
}

/**
 * Requeues a destination's failed deliveries created in [since, until): dead ones, and pending ones that
 * have failed at least once (made due now, schedule restarted). Returns how many.
 */
export async function replayFailed(rt: Runtime, destination: string, since: number, until: number): Promise<number> {
  const now = rt.clock.now()
  const result = await rt.store.db
    .updateTable('destination_deliveries')
    .set({ status: 'pending', round_attempts: 0, next_attempt_at: 0, claimed_by: null, claimed_until: null, ordered: orderedFlag(rt) })
    .where('destination', '=', destination)
    .where('created_at', '>=', since)
    .where('created_at', '<', until)
    .where((eb) => eb.or([eb('status', '=', 'dead'), eb.and([eb('status', '=', 'pending'), eb('attempts', '>', 0)])]))
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
    .executeTakeFirst()
  return Number(result.numUpdatedRows)
}

export interface DestinationSummary {
  name: string
  url: string
  events: string[] | 'all'
  ordered: boolean
  state: 'active' | 'disabled'
  disabled_reason: string | null
  pending: number
  delivered: number
  dead: number
  oldest_pending_at: string | null
}

/** Every configured destination (and any with rows but no longer configured) with its counts. */
export async function summarizeDestinations(rt: Runtime): Promise<DestinationSummary[]> {
  const counts = await rt.store.db
    .selectFrom('destination_deliveries')
    .select((eb) => ['destination', 'status', eb.fn.countAll<number>().as('n'), eb.fn.min<number>('created_at').as('oldest')])
    .groupBy(['destination', 'status'])
    .execute()
  const disabled = await disabledDestinations(rt)
  const configured = rt.config.destinations.list
  const names = [...new Set([...configured.map((d) => d.name), ...counts.map((c) => c.destination)])]
  return names.map((name) => {
    const d = configured.find((c) => c.name === name)
    const of = (status: string) => counts.find((c) => c.destination === name && c.status === status)
    const off = disabled.get(name)
    return {
      name,
      url: d ? shownUrl(d.url) : '(no longer configured)',
      events: d?.events ?? 'all',
      ordered: d?.ordered ?? false,
      state: off ? 'disabled' : 'active',
      disabled_reason: off?.reason ?? null,
      pending: Number(of('pending')?.n ?? 0),
      delivered: Number(of('delivered')?.n ?? 0),
      dead: Number(of('dead')?.n ?? 0),
      oldest_pending_at: iso(of('pending')?.oldest ?? null),
    }
  })
}

/**
 * The destinations' counts and a page of deliveries (the dashboard's Destinations page, `GET /admin/destinations`):
 * counting scans the outbox's index, seconds with millions of deliveries, so under `serve` it runs in the processing
 * thread rather than on the receiver's loop.
 */
export const destinationsOverviewTask = defineProcessingTask('destinationsOverview', async (rt, args: { deliveries?: DeliveryFilter }) => ({
  destinations: await summarizeDestinations(rt),
  deliveries: args.deliveries ? await listDeliveries(rt, args.deliveries) : [],
}))

/** `replayFailed` over every failed and dead delivery of a destination (an update as wide as its outbox), in the processing thread. */
export const replayFailedTask = defineProcessingTask('destinationsReplayFailed', (rt, args: { destination: string; since: number; until: number }) =>
  replayFailed(rt, args.destination, args.since, args.until),
)
