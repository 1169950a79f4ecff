import { sql, type CompiledQuery, type ExpressionBuilder, type RawBuilder, type Selectable, type Transaction } from 'kysely'
import { isNamedTargetEvent } from '../webhooks/provider-target.ts'
import type { Database, DestinationDeliveriesTable, WebhookEventsTable } from '../db/schema.ts'
import type { Runtime } from '../runtime.ts'
import type { DestinationConfig, ForwardedBody, ForwardedEvent } from '../config/destinations.ts'
import { deliveryId } from './sign.ts'
import { chunks } from '../utils/chunks.ts'
import { inImmediateTransaction } from '../db/sqlite-transaction.ts'
import { encodeValues, inParameter, inValues } from '../db/in-values.ts'
import { queryTemplate, type SlotOf } from '../db/query-template.ts'
import { inClaimSubquery } from '../db/in-claim-subquery.ts'
import { storableOrNull } from '../db/storable-text.ts'

/**
 * The durable outbox: one `destination_deliveries` row per (event, destination). Rows are written in the
 * transaction that records the event as processed, with an id derived from both, so a crash can neither
 * lose a delivery (no commit, no processed event: it is processed again) nor invent one (a second
 * enqueue of the same pair is ignored).
 */

export type DeliveryRow = Selectable<DestinationDeliveriesTable>

/** What the worker needs of a claimed delivery: its identity, its place and count of attempts, its claim, its body. */
export type ClaimedDelivery = Pick<DeliveryRow, (typeof CLAIMED_COLUMNS)[number] | 'payload'> & {
  /**
   * SQLite: the row's rowid, read with its claim, so that its outcome finds the row in the table itself rather than
   * through the primary key's index (3.2 against 4.9 µs a row on a 200,000-row outbox). Null on Postgres.
   */
  rowid: number | null
}

/** An event to forward: a stored webhook event's columns, or an event a recipe published. */
export type OutboxEvent = Pick<Selectable<WebhookEventsTable>, 'event_id' | 'event_type' | 'agent_id' | 'conversation_id' | 'received_at' | 'body'> &
  Partial<Pick<Selectable<WebhookEventsTable>, 'target' | 'source'>> & {
    /** A recipe's publish; a stored event's origin is read from its target and source. */
    origin?: 'recipe'
  }

function wildcard(pattern: string, type: string): boolean {
  return pattern === '*' || pattern === type || (pattern.endsWith('.*') && type.startsWith(pattern.slice(0, -1)))
}

/**
 * Whether one of a destination's `events` patterns takes the event: a type (`call.completed`, `call.*`, `*`), or — as
 * recipes subscribe — `<target>:<type>` (`crm:contact.updated`, `crm:*`) for the events of one named target.
 */
function matches(rt: Runtime, pattern: string, event: OutboxEvent): boolean {
  const colon = pattern.indexOf(':')
  if (colon <= 0) return wildcard(pattern, event.event_type)
  const fromTarget = event.origin !== 'recipe' && event.target !== undefined && isNamedTargetEvent(rt, { source: event.source ?? 'webhook', target: event.target })
  return fromTarget && pattern.slice(0, colon) === event.target && wildcard(pattern.slice(colon + 1), event.event_type)
}

/** Whether `destination` wants `event` (types, agents, then its filter function). */
export function wants(rt: Runtime, destination: DestinationConfig, event: OutboxEvent, parsed: () => ForwardedEvent | undefined): boolean {
  if (destination.events && !destination.events.some((p) => matches(rt, p, event))) return false
  if (destination.agentIds && (event.agent_id === null || !destination.agentIds.includes(Number(event.agent_id)))) return false
  if (!destination.filter) return true
  const forwarded = parsed()
  if (!forwarded) {
    rt.log.error({ destination: destination.name, event_id: event.event_id }, 'event body is not JSON, so the destination filter cannot run; event not forwarded')
    return false
  }
  let verdict: unknown
  try {
    verdict = destination.filter(forwarded)
  } catch (error) {
    // A throwing filter is a bug in the config file; the event is skipped for this destination, loudly.
    rt.log.error({ destination: destination.name, event_id: event.event_id, err: (error as Error)?.message ?? String(error) }, 'destination filter threw; event not forwarded')
    return false
  }
  return filterVerdict(rt, destination, event.event_id, verdict)
}

/**
 * Destinations whose filter was logged returning something other than true or false — a Promise (an error: it forwards
 * everything), or another value read as a condition (a warning) — once each per kind, not once an event: one set for
 * both let a filter's `undefined` on one event hide its Promise on the next.
 */
const misreadFilters = { promise: new WeakSet<DestinationConfig>(), condition: new WeakSet<DestinationConfig>() }

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function'

/** `undefined`, `null`, `a number`: what a filter returned, named without its value (which may hold the event's data). */
function kindOf(value: unknown): string {
  if (value === null || value === undefined) return String(value)
  const type = typeof value
  return `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}`
}

/**
 * What a filter's answer means (DestinationFilter says why): true and false as they are; anything else as JavaScript
 * reads a condition — so a Promise, which forwarding cannot wait for, forwards the event rather than dropping it —
 * and logged once per destination, as the configuration mistake it is.
 */
function filterVerdict(rt: Runtime, destination: DestinationConfig, eventId: string, verdict: unknown): boolean {
  if (typeof verdict === 'boolean') return verdict
  // Its rejection is no one's to handle: left alone, it would be an unhandled rejection, which stops the process.
  if (isThenable(verdict)) verdict.then(undefined, () => undefined)
  const logged = isThenable(verdict) ? misreadFilters.promise : misreadFilters.condition
  if (!logged.has(destination)) {
    logged.add(destination)
    const fields = { destination: destination.name, event_id: eventId }
    if (isThenable(verdict)) {
      rt.log.error(fields, 'destination filter returned a Promise: a filter must be synchronous and return true or false; its events are forwarded unfiltered until it is fixed')
    } else {
      rt.log.warn({ ...fields, returned: kindOf(verdict) }, `destination filter returned ${kindOf(verdict)}, not true or false: read as a condition is (undefined, null, 0, '' and NaN skip an event, other values forward it); logged once for this destination`)
    }
  }
  return Boolean(verdict)
}

function forwardedEvent(rt: Runtime, event: OutboxEvent): ForwardedEvent | undefined {
  try {
    const body = JSON.parse(event.body) as ForwardedBody
    const fromTarget = event.origin === undefined && event.target !== undefined && event.source !== undefined && isNamedTargetEvent(rt, { target: event.target, source: event.source })
    return {
      id: event.event_id,
      type: event.event_type,
      agentId: event.agent_id === null ? null : Number(event.agent_id),
      conversationId: event.conversation_id,
      source: event.origin ?? (fromTarget ? 'target' : 'provider'),
      ...(fromTarget ? { target: event.target } : {}),
      body,
    }
  } catch {
    return undefined
  }
}

const INSERT_CHUNK = 500

/**
 * Writes the deliveries `events` owe to the configured destinations, inside `trx` (the transaction that
 * marks them processed). Safe to call twice for the same events. Returns how many rows it wrote.
 */
export async function enqueueDeliveries(trx: Transaction<Database>, rt: Runtime, events: OutboxEvent[], planned?: DeliveryRow[]): Promise<number> {
  // `planned`: what planDeliveries already said for these events (each filter runs once per event and destination).
  const rows = planned ?? planDeliveries(rt, events)
  if (rows.length === 0) return 0
  // The body once per event in destination_payloads, however many destinations it goes to (a second enqueue
  // keeps the first). The rows carry none: the previous release reads the body from this table too.
  const owed = new Set(rows.map((r) => r.event_id))
  const createdAt = rows[0]!.created_at
  const payloads = events.filter((e) => owed.delete(e.event_id)).map((e) => ({ event_id: e.event_id, payload: e.body, created_at: createdAt }))
  for (const chunk of chunks(payloads, INSERT_CHUNK)) {
    await trx
      .insertInto('destination_payloads')
      .values(chunk)
      .onConflict((oc) => oc.column('event_id').doNothing())
      .execute()
  }
  let written = 0
  for (const chunk of chunks(rows, INSERT_CHUNK)) {
    const result = await trx
      .insertInto('destination_deliveries')
      .values(chunk)
      .onConflict((oc) => oc.column('id').doNothing())
      .executeTakeFirst()
    written += Number(result.numInsertedOrUpdatedRows ?? 0)
  }
  if (written > 0) notifyEnqueued(rt)
  return written
}

/** The delivery rows `events` owe to the configured destinations (nothing written). */
export function planDeliveries(rt: Runtime, events: OutboxEvent[]): DeliveryRow[] {
  const destinations = rt.config.destinations.list
  if (destinations.length === 0 || events.length === 0) return []
  const now = rt.clock.now()
  const rows: DeliveryRow[] = []
  for (const event of events) {
    const orderAt = nextOrderAt(rt, Number(event.received_at))
    let parsed: ForwardedEvent | undefined | null = null
    const lazy = () => (parsed === null ? (parsed = forwardedEvent(rt, event)) : parsed)
    for (const destination of destinations) {
      if (!wants(rt, destination, event, lazy)) continue
      rows.push({
        id: deliveryId(destination.name, event.event_id),
        destination: destination.name,
        event_id: event.event_id,
        event_type: event.event_type,
        conversation_id: event.conversation_id,
        // Not the body: that is in destination_payloads (the column goes in the next release; README → Rolling deploys).
        payload: '',
        order_at: orderAt,
        // Only an ordered destination's deliveries enter the ordering index (migration 0013).
        ordered: destination.ordered ? 1 : 0,
        status: 'pending',
        attempts: 0,
        round_attempts: 0,
        next_attempt_at: now,
        claimed_by: null,
        claimed_until: null,
        last_status: null,
        last_error: null,
        created_at: now,
        delivered_at: null,
      })
    }
  }
  return rows
}

/** The last `order_at` given in each recent millisecond, per database handle: one per process (thread) and database. */
const lastOrderAt = new WeakMap<Runtime['store'], Map<number, number>>()
/** Milliseconds remembered (the oldest forgotten first): far more than a batch's or a retried event's spread. */
const REMEMBERED_MS = 4096

/**
 * An event's `order_at`: its receipt (or publish) time in µs-sized steps. Events of one millisecond go after the
 * last one given in that millisecond by this process, so they keep the order they were given in — across
 * processing batches and publishes (each its own batch), up to 1,000 a millisecond; with an index within the batch
 * only, two events of one millisecond in different batches tied and went by id (a hash), and a recipe's
 * `followup.sent` could reach an ordered destination before its `followup.scheduled`. Kept per millisecond, not as
 * one "last given": a publish stamped now, then a batch of events received a millisecond earlier (processing lags
 * receipt), would otherwise number those by their index in their own batch and put a later batch's first event
 * before an earlier batch's second.
 */
function nextOrderAt(rt: Runtime, receivedAt: number): number {
  let given = lastOrderAt.get(rt.store)
  if (!given) lastOrderAt.set(rt.store, (given = new Map()))
  const floor = receivedAt * 1000
  const last = given.get(receivedAt)
  const at = last === undefined ? floor : Math.min(last + 1, floor + 999)
  // Re-inserted: the map's order is then the order of use, and the least recently used millisecond goes first.
  given.delete(receivedAt)
  given.set(receivedAt, at)
  if (given.size > REMEMBERED_MS) given.delete(given.keys().next().value!)
  return at
}

/** The names of the destinations configured `ordered`. */
function orderedDestinations(rt: Runtime): string[] {
  return rt.config.destinations.list.filter((d) => d.ordered).map((d) => d.name)
}

/**
 * A row's `ordered` flag as the configuration has it now, for rows written earlier (a replay puts a delivery back
 * in the queue): 1 for the deliveries of an ordered destination, else 0.
 */
export function orderedFlag(rt: Runtime): RawBuilder<number> {
  const names = orderedDestinations(rt)
  return names.length === 0 ? sql<number>`0` : sql<number>`case when destination in (${sql.join(names)}) then 1 else 0 end`
}

/**
 * Brings the pending deliveries of ordered destinations into their conversations' order: those queued while their
 * destination did not order (or by a release whose rows say so) have `ordered = 0` and would otherwise go out beside
 * the order. The delivery worker runs this before it claims. Returns how many rows it changed.
 */
export async function orderQueuedDeliveries(rt: Runtime): Promise<number> {
  const names = orderedDestinations(rt)
  if (names.length === 0) return 0
  const result = await rt.store.db
    .updateTable('destination_deliveries')
    .set({ ordered: 1 })
    .where('destination', 'in', names)
    .where('status', '=', sql.lit('pending'))
    .where('ordered', '=', 0)
    .executeTakeFirst()
  return Number(result.numUpdatedRows)
}

const listeners = new WeakMap<Runtime, () => void>()

/** The delivery worker of this process registers here to be woken when rows are written. */
export function onEnqueued(rt: Runtime, listener: (() => void) | undefined): void {
  if (listener) listeners.set(rt, listener)
  else listeners.delete(rt)
}

function notifyEnqueued(rt: Runtime): void {
  const listener = listeners.get(rt)
  // After the commit, not inside the transaction: the wake must find the rows. The sweep covers the rare
  // case where the timer fires first.
  if (listener) rt.clock.setTimeout(listener, 5)
}

/**
 * Claims up to `limit` due deliveries of one destination for `owner`, oldest first, so that no other worker
 * (replica) claims them until the claim lapses: under SQLite's write lock, or FOR UPDATE SKIP LOCKED on
 * Postgres. With ordering, only the earliest pending delivery of each conversation is claimable.
 */
export async function claimDeliveries(rt: Runtime, destination: DestinationConfig, owner: string, limit: number, claimMs: number): Promise<ClaimedDelivery[]> {
  const now = rt.clock.now()
  const rows = rt.store.sqlite ? await claimOnSqlite(rt, destination, owner, limit, now, now + claimMs) : await claimOnPostgres(rt, destination, owner, limit, now, now + claimMs)
  return rows.sort((a, b) => a.order_at - b.order_at || (a.id < b.id ? -1 : 1))
}

type DeliveryAsD = Database & { d: DestinationDeliveriesTable }

/** How the id of an event a recipe published begins (src/destinations/publish.ts); a stored event's id is the sender's. */
export const PUBLISHED_PREFIX = 'pub_'

/**
 * Of an ordered destination's deliveries (`d`), one that no earlier pending delivery of its conversation holds back:
 * the only kind a claim takes, and the one a pause ended by hand makes due as the probe (src/destinations/pauses.ts).
 */
export function firstOfItsConversation({ not, exists, selectFrom }: ExpressionBuilder<DeliveryAsD, 'd'>) {
  return not(
    exists(
      selectFrom('destination_deliveries as e')
        .select(sql.lit(1).as('one'))
        .whereRef('e.destination', '=', 'd.destination')
        .whereRef('e.conversation_id', '=', 'd.conversation_id')
        // Literals, not parameters: they name the partial index's condition (migration 0013).
        .where('e.status', '=', sql.lit('pending'))
        .where('e.ordered', '=', sql.lit(1))
        .where((eb) => eb.or([eb('e.order_at', '<', eb.ref('d.order_at')), eb.and([eb('e.order_at', '=', eb.ref('d.order_at')), eb('e.id', '<', eb.ref('d.id'))])])),
    ),
  )
}

/**
 * Of an ordered destination's deliveries (`d`), one whose conversation has no event received before it still waiting
 * to be processed. A delivery row is written when its event is processed, so `firstOfItsConversation` sees only the
 * events processed so far: with several workers (replicas on Postgres) a conversation's events are processed at once
 * on different ones, and a later event whose batch finished first went out first — seconds ahead, under load, of one
 * received and acknowledged before it. Pending events are the backlog's, searched in the status index that carries the
 * conversation (migration 0021) from the oldest: those received before this delivery's event are the few in flight.
 * An event whose processing failed (`failed`, waiting for its retry) holds nothing, as README → Forwarding says.
 */
function noEarlierEventUnprocessed(eb: ExpressionBuilder<DeliveryAsD, 'd'>) {
  const { or, not, exists, selectFrom, ref } = eb
  return or([
    // A recipe's publish (src/destinations/publish.ts) is stamped when published, after the whole backlog's receipt:
    // looked up so, it would scan every pending event, for each one queued. Publishes keep their own order.
    eb(sql<string>`substr(${ref('d.event_id')}, 1, 4)`, '=', sql.lit(PUBLISHED_PREFIX)),
    not(exists(
      selectFrom('webhook_events as w')
        .select(sql.lit(1).as('one'))
        // A literal, not a parameter: the status index's value (src/webhooks/keyed-lookup.ts).
        .where('w.status', '=', sql.lit('pending'))
        // `order_at` is the event's receipt in thousandths of its millisecond (nextOrderAt): its millisecond, by integer division.
        .where('w.received_at', '<=', sql<number>`${ref('d.order_at')} / 1000`)
        .whereRef('w.conversation_id', '=', 'd.conversation_id')
        .whereRef('w.event_id', '<>', 'd.event_id'),
    )),
  ])
}

/** The due, unclaimed deliveries of a destination, oldest first: with ordering, each conversation's earliest pending one only. */
function dueDeliveries(rt: Runtime, destination: DestinationConfig, now: number) {
  let due = rt.store.db
    .selectFrom('destination_deliveries as d')
    .where('d.destination', '=', destination.name)
    // A literal, not a parameter: it names the partial index's condition (migration 0010).
    .where('d.status', '=', sql.lit('pending'))
    .where('d.next_attempt_at', '<=', now)
    .where((eb) => eb.or([eb('d.claimed_until', 'is', null), eb('d.claimed_until', '<', now)]))
  if (destination.ordered) due = due.where(firstOfItsConversation).where(noEarlierEventUnprocessed)
  // Ordered by the index alone, so the scan stops at `limit` (a second sort key would sort the whole backlog).
  return due.orderBy('d.next_attempt_at')
}

/**
 * SQLite: when a plain read finds anything due, read the due rows with their bodies, then mark them claimed by
 * rowid, in one BEGIN IMMEDIATE transaction (no other writer between the two). Less work than the single
 * UPDATE … WHERE id IN (…) RETURNING that Postgres runs: no second lookup of each row through the primary key, the
 * body joined rather than looked up per returned row, and no kysely machinery per statement. Measured on the outbox's SQL alone (20,000
 * deliveries, claims of 288): 8.3–9.2 µs a delivery against 11.5–11.6 µs.
 */
async function claimOnSqlite(rt: Runtime, destination: DestinationConfig, owner: string, limit: number, now: number, until: number): Promise<ClaimedDelivery[]> {
  const statements = outboxStatements(rt).claims(destination)
  // A plain read first, outside any transaction: a lane with nothing due looks every sweep (4 times a second per
  // destination), and BEGIN IMMEDIATE would take SQLite's one write lock each time, the receiver's commits queued
  // behind it. The transaction below reads again under the lock: another replica may have claimed the rows since.
  if ((await rt.store.db.executeQuery(statements.anyDue({ now }))).rows.length === 0) return []
  const select = statements.select({ now, limit })
  return inImmediateTransaction(rt.store, (q) => {
    const rows = q.all(select)
    if (rows.length === 0) return []
    q.run(statements.mark({ owner, until, rowids: encodeValues('sqlite', rows.map((r) => r.rowid)) }))
    return rows.map((r) => ({ id: r.id, rowid: r.rowid, event_id: r.event_id, event_type: r.event_type, order_at: r.order_at, attempts: r.attempts, round_attempts: r.round_attempts, claimed_until: until, payload: r.payload }))
  })
}

/** A destination's claim statements on SQLite (src/db/query-template.ts: each compiled on first use). */
function sqliteClaimStatements(rt: Runtime, destination: DestinationConfig) {
  const db = rt.store.db
  return {
    anyDue: queryTemplate<{ now: number }, { one: number }>((slot) => dueDeliveries(rt, destination, slot('now')).select(sql.lit(1).as('one')).limit(1).compile()),
    select: queryTemplate<{ now: number; limit: number }, ClaimRow>((slot) =>
      dueDeliveries(rt, destination, slot('now'))
        .leftJoin('destination_payloads as p', 'p.event_id', 'd.event_id')
        .select([sql<number>`d.rowid`.as('rowid'), 'd.id', 'd.event_id', 'd.event_type', 'd.order_at', 'd.attempts', 'd.round_attempts'])
        // The body from destination_payloads, or the row's own copy for a row a release before migration 0009 wrote.
        .select((eb) => eb.fn.coalesce('p.payload', 'd.payload').as('payload'))
        .limit(slot('limit'))
        .compile(),
    ),
    mark: queryTemplate<{ owner: string; until: number; rowids: unknown }>((slot) =>
      db.updateTable('destination_deliveries').set({ claimed_by: slot('owner'), claimed_until: slot('until') }).where(inParameter('sqlite', 'rowid', slot('rowids'))).compile(),
    ),
  }
}

interface ClaimRow {
  rowid: number
  id: string
  event_id: string
  event_type: string
  order_at: number
  attempts: number
  round_attempts: number
  payload: string
}

/** Postgres: one UPDATE over a sub-select that re-checks the claim, FOR UPDATE SKIP LOCKED, so replicas never claim the same row. */
async function claimOnPostgres(rt: Runtime, destination: DestinationConfig, owner: string, limit: number, now: number, until: number): Promise<ClaimedDelivery[]> {
  const due = dueDeliveries(rt, destination, now).select('d.id').limit(limit).forUpdate().skipLocked()
  return rt.store.db
    .updateTable('destination_deliveries')
    .set({ claimed_by: owner, claimed_until: until })
    .where(inClaimSubquery('postgres', 'id', due))
    .where('status', '=', 'pending')
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
    // Only what the worker uses: each returned row is an object built per claim, a few hundred a second.
    .returning(CLAIMED_COLUMNS)
    // A sub-select in RETURNING: the body with its row, in the one statement.
    .returning((eb) => eventBody(eb).as('payload'))
    .returning(sql<number | null>`null`.as('rowid'))
    .execute()
}

/**
 * The body a delivery sends, read with its row: from destination_payloads, or the row's own copy for a row a
 * release before migration 0009 wrote (once the column is gone — README → Rolling deploys — this becomes the
 * sub-select alone).
 */
export function eventBody(eb: ExpressionBuilder<Database, 'destination_deliveries'>) {
  return eb.fn.coalesce(
    eb.selectFrom('destination_payloads as p').select('p.payload').whereRef('p.event_id', '=', 'destination_deliveries.event_id'),
    'destination_deliveries.payload',
  )
}

/** The columns of a claimed delivery the worker reads (its body is added from destination_payloads). */
export const CLAIMED_COLUMNS = ['id', 'event_id', 'event_type', 'order_at', 'attempts', 'round_attempts', 'claimed_until'] as const satisfies ReadonlyArray<keyof DestinationDeliveriesTable>

/** Every column of a delivery row but its body. */
export const DELIVERY_COLUMNS = [
  'id', 'destination', 'event_id', 'event_type', 'conversation_id', 'order_at', 'ordered', 'status', 'attempts', 'round_attempts',
  'next_attempt_at', 'claimed_by', 'claimed_until', 'last_status', 'last_error', 'created_at', 'delivered_at',
] as const satisfies ReadonlyArray<Exclude<keyof DestinationDeliveriesTable, 'payload'>>

/** Gives claimed rows back (a paused destination, a stale buffer, shutdown). */
export async function releaseClaims(rt: Runtime, owner: string, ids: string[]): Promise<void> {
  if (ids.length === 0) return
  await rt.store.db.updateTable('destination_deliveries').set({ claimed_by: null, claimed_until: null }).where('id', 'in', ids).where('claimed_by', '=', owner).execute()
}

/**
 * Extends claims of `owner` to end no sooner than `until` — each only while it is the claim its holder knows, ending
 * at `claimedUntil` (as claimed, or as last renewed): a claim that lapsed and was taken since, by another replica or
 * afresh by this one, has another end (or holder) and is left as it is. Returns the ids renewed, each with its
 * claim's end now.
 */
export async function renewClaims(rt: Runtime, owner: string, claims: ReadonlyArray<{ id: string; claimedUntil: number }>, until: number): Promise<Map<string, number>> {
  const byEnd = new Map<number, string[]>()
  for (const c of claims) {
    const ids = byEnd.get(c.claimedUntil)
    if (ids) ids.push(c.id)
    else byEnd.set(c.claimedUntil, [c.id])
  }
  const renewed = new Map<string, number>()
  for (const [end, ids] of byEnd) {
    const rows = await rt.store.db
      .updateTable('destination_deliveries')
      // Never shortened: a claim with more left keeps it.
      .set({ claimed_until: Math.max(end, until) })
      .where(inValues(rt.store.dialect, 'id', ids))
      .where('claimed_by', '=', owner)
      .where('claimed_until', '=', end)
      .returning(['id', 'claimed_until'])
      .execute()
    for (const row of rows) renewed.set(row.id, Number(row.claimed_until))
  }
  return renewed
}

/** One finished attempt, ready to be recorded. */
export interface AttemptRecord {
  row: ClaimedDelivery
  result: 'delivered' | 'retry' | 'dead' | 'disabled'
  startedAt: number
  latencyMs: number
  status: number | null
  error: string | null
  response: string | null
  nextAttemptAt: number
  /** Whether the attempt counts against the retry schedule (a 410 does not: the destination is off). */
  countsInRound: boolean
}

/**
 * The outbox's hot statements for one runtime, each compiled by kysely on first use and then bound to new values
 * (src/db/query-template.ts): a destination's claims on SQLite, and the outcome of deliveries answered with a 2xx.
 */
function outboxStatements(rt: Runtime): OutboxStatements {
  let statements = statementsByRuntime.get(rt)
  if (!statements) {
    const claims = new Map<DestinationConfig, ReturnType<typeof sqliteClaimStatements>>()
    statements = {
      claims(destination) {
        let found = claims.get(destination)
        if (!found) claims.set(destination, (found = sqliteClaimStatements(rt, destination)))
        return found
      },
      delivered: queryTemplate<DeliveredValues>((slot) =>
        markDelivered(rt, slot)
          .where(inParameter(rt.store.dialect, 'id', slot('ids')))
          .where('claimed_by', '=', slot('owner'))
          .compile(),
      ),
      // On SQLite, each row found by the rowid its claim read. The ids are checked too: a VACUUM (never run by
      // switchboard, but an operator may) can renumber rows, and a renumbered row whose id is not in this batch is
      // then left alone — its claim lapses and it is sent again (at least once), rather than another delivery marked.
      deliveredByRowid: queryTemplate<DeliveredValues & { rowids: unknown }>((slot) =>
        markDelivered(rt, slot)
          .where(inParameter('sqlite', 'rowid', slot('rowids')))
          .where(inParameter('sqlite', 'id', slot('ids')))
          .where('claimed_by', '=', slot('owner'))
          .compile(),
      ),
    }
    statementsByRuntime.set(rt, statements)
  }
  return statements
}

interface OutboxStatements {
  claims(destination: DestinationConfig): ReturnType<typeof sqliteClaimStatements>
  delivered(values: DeliveredValues): CompiledQuery
  deliveredByRowid(values: DeliveredValues & { rowids: unknown }): CompiledQuery
}

const statementsByRuntime = new WeakMap<Runtime, OutboxStatements>()

/** The UPDATE that records a 2xx answer (its rows chosen by the caller), the values as a template's slots. */
function markDelivered(rt: Runtime, slot: SlotOf<DeliveredValues>) {
  return rt.store.db
    .updateTable('destination_deliveries')
    .set((eb) => ({
      status: 'delivered',
      attempts: eb('attempts', '+', 1),
      round_attempts: eb('round_attempts', '+', 1),
      next_attempt_at: slot('now'),
      last_status: slot('status'),
      last_error: null,
      delivered_at: slot('now'),
      claimed_by: null,
      claimed_until: null,
    }))
}

interface DeliveredValues {
  now: number
  status: number
  /** The delivery ids, encoded by `encodeValues`. */
  ids: unknown
  owner: string
}


/**
 * Records attempts in one transaction (group commit: one fsync for many deliveries), each guarded by
 * the claim so a worker whose claim lapsed cannot overwrite a newer outcome.
 */
export async function recordAttempts(rt: Runtime, owner: string, records: AttemptRecord[]): Promise<void> {
  if (records.length === 0) return
  const now = rt.clock.now()
  const db = rt.store.db
  const statements: CompiledQuery[] = []
  // The common case — delivered — in one statement per status code; the rest row by row.
  const delivered = new Map<number, ClaimedDelivery[]>()
  for (const r of records) {
    if (r.result !== 'delivered' || r.status === null) continue
    const rows = delivered.get(r.status)
    if (rows) rows.push(r.row)
    else delivered.set(r.status, [r.row])
  }
  const dialect = rt.store.dialect
  for (const [status, rows] of delivered) {
    // The ids as one parameter (src/db/in-values.ts): one statement text, prepared once, whatever the batch.
    const ids = encodeValues(dialect, rows.map((r) => r.id))
    const rowids = dialect === 'sqlite' && rows.every((r) => r.rowid !== null) ? rows.map((r) => r.rowid!) : undefined
    const outbox = outboxStatements(rt)
    statements.push(rowids ? outbox.deliveredByRowid({ now, status, rowids: encodeValues('sqlite', rowids), ids, owner }) : outbox.delivered({ now, status, ids, owner }))
  }
  for (const r of records) {
    if (r.result === 'delivered' && r.status !== null) continue
    statements.push(
      db
        .updateTable('destination_deliveries')
        .set({
          status: r.result === 'delivered' ? 'delivered' : r.result === 'dead' ? 'dead' : 'pending',
          attempts: r.row.attempts + 1,
          round_attempts: r.row.round_attempts + (r.countsInRound ? 1 : 0),
          next_attempt_at: r.nextAttemptAt,
          last_status: r.status,
          // Texts that came from the network in part: made storable here, where every outcome is written.
          last_error: storableOrNull(r.error),
          delivered_at: r.result === 'delivered' ? now : null,
          claimed_by: null,
          claimed_until: null,
        })
        .where('id', '=', r.row.id)
        .where('claimed_by', '=', owner)
        .compile(),
    )
  }
  // A first-try success is fully described by its delivery row (last_status, delivered_at; latency is in
  // the histogram): only deliveries that ever failed keep an attempt log — half the writes on the hot path.
  const attemptRows = records.filter((r) => !(r.result === 'delivered' && r.row.attempts === 0)).map((r) => ({
    delivery_id: r.row.id,
    attempt: r.row.attempts + 1,
    started_at: r.startedAt,
    latency_ms: r.latencyMs,
    status: r.status,
    result: r.result,
    error: storableOrNull(r.error),
    response: storableOrNull(r.response),
  }))
  for (const chunk of chunks(attemptRows, INSERT_CHUNK)) {
    statements.push(
      db
        .insertInto('destination_attempts')
        .values(chunk)
        .onConflict((oc) => oc.columns(['delivery_id', 'attempt']).doNothing())
        .compile(),
    )
  }
  // One transaction; on SQLite the statements run synchronously under the write lock taken up front.
  if (rt.store.sqlite) {
    await inImmediateTransaction(rt.store, (q) => {
      for (const statement of statements) q.run(statement)
    })
    return
  }
  await db.transaction().execute(async (trx) => {
    for (const statement of statements) await trx.executeQuery(statement)
  })
}
