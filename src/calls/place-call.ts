import type { QueuedWindow } from './window-at-send.ts'
import type { Insertable, Selectable } from 'kysely'
import type { CallsTable } from '../db/schema.ts'
import { toJson } from '../db/json.ts'
import type { Runtime } from '../runtime.ts'
import { VoiceApiError } from '../upstream/errors.ts'
import type { CallRequest, CallResponse } from '../upstream/schemas.ts'
import { toCallRecord, type CallRecord, type CallStatus } from './record.ts'
import { tenantOf } from './tenant.ts'
import { contactKey } from '../campaigns/contact-key.ts'
import { timeOrderedId } from '../utils/time-ordered-id.ts'

/** The provider's idempotency window (spec → Limits): a key may be used again after it. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000
/**
 * A row still `pending` this long after its last update belongs to a process that died mid-request (killed while its
 * call was being sent). The proxy sends within its call budget (25 s, src/proxy/proxy.ts → CALL_BUDGET_MS), so a
 * minute is past any live attempt; the next request with the key then takes the row over and goes to the provider
 * with that same key, which answers 409 if the dead process's attempt placed the call. (It was 10 minutes: a caller
 * retrying after a restart was told 409 "already used" for a call that may never have been placed.)
 */
export const STALE_PENDING_MS = 60 * 1000

export interface PlaceCallInput {
  apiKey: string
  request: CallRequest
  recipe?: string | null
  campaign?: string | null
  previousConversationId?: string | null
  /** The recipient's calling window, applied again when a queued call is sent (`requestInWindow`). */
  window?: QueuedWindow
  /**
   * How long sending may take, retries included (the client's `budgetMs`): a caller holding an HTTP client
   * (the proxy) answers within it; when it runs out the row is `failed`, so a retry with the same key goes
   * to the provider, which knows whether the call exists. Unset: the retry policy alone bounds it.
   */
  budgetMs?: number
}

export type PlaceCallResult =
  | {
      ok: true
      call: CallResponse
      record: CallRecord
      /** Rate-limit headers of the provider's answer. */
      headers: Headers
      /** The provider's answer as sent (absent for a recovered call: there is none), for the proxy to pass on. */
      answer?: { status: number; body: string; contentType: string | null }
      /**
       * True when an earlier attempt's answer was lost and the provider then reported the key as used:
       * the call exists, but its trace id is unknown (`call.trace_id` is '').
       */
      recovered?: boolean
    }
  | { ok: false; duplicate: true; record: CallRecord }
  | { ok: false; duplicate: false; error: VoiceApiError; record: CallRecord | null }

export type Claim = { kind: 'claimed'; id: string; resumesAmbiguous: boolean } | { kind: 'duplicate'; record: CallRecord }

function customerPhone(request: CallRequest): string {
  return request.parameters.find((p) => p.name === 'customer_phone')?.value ?? ''
}

/**
 * Writes the ledger row before anything is sent: the unique (tenant, agent, key) index makes the local
 * 24 h idempotency record race-free across requests and replicas. A row whose key may be used again
 * (older than the window, refused by the provider, or ambiguous so the provider must decide) is taken
 * over with a compare-and-set on its last update.
 */
/** The ledger row of a tenant + agent + idempotency key (the unique index). */
function findByKey(db: Runtime['store']['db'], key: { tenant: string; agent_id: number; idempotency_key: string }) {
  return db
    .selectFrom('calls')
    .selectAll()
    .where('tenant', '=', key.tenant)
    .where('agent_id', '=', key.agent_id)
    .where('idempotency_key', '=', key.idempotency_key)
    .executeTakeFirst()
}

/**
 * Whether a ledger row no longer holds its key at `now`: past the 24 h window, refused, failed, or pending with its
 * process gone. A key whose row is not reusable is a duplicate.
 */
function isReusable(existing: Selectable<CallsTable>, now: number): boolean {
  const expired = existing.created_at <= now - IDEMPOTENCY_WINDOW_MS
  const stalePending = existing.status === 'pending' && existing.updated_at <= now - STALE_PENDING_MS
  return expired || existing.status === 'rejected' || existing.status === 'failed' || stalePending
}

/**
 * The call the ledger holds `row`'s key for, when queueing `row` now would be a duplicate — read only, for a dry run,
 * which must answer as the real run would: it answered `planned` for a key a real run had used an hour before.
 */
export async function ledgerDuplicate(db: Runtime['store']['db'], row: { tenant: string; agent_id: number; idempotency_key: string; created_at: number }): Promise<CallRecord | undefined> {
  const earlier = await earlierAttempt(db, row, row.created_at)
  return earlier && 'duplicate' in earlier ? earlier.duplicate : undefined
}

/**
 * What the ledger knows of an earlier call with `key`, before a new one with it is checked: `duplicate`, the call it
 * holds the key for (a retry is told 409 whatever changed since — the number added to the do-not-call list, say);
 * `ambiguous`, an earlier attempt whose answer never came (a timeout, a dropped connection: the provider may have
 * placed it); else nothing.
 */
export async function earlierAttempt(
  db: Runtime['store']['db'],
  key: { tenant: string; agent_id: number; idempotency_key: string },
  now: number,
): Promise<{ duplicate: CallRecord } | { ambiguous: CallRecord } | undefined> {
  const existing = await findByKey(db, key)
  if (!existing) return undefined
  if (!isReusable(existing, now)) return { duplicate: toCallRecord(existing) }
  const expired = existing.created_at <= now - IDEMPOTENCY_WINDOW_MS
  return !expired && existing.status === 'failed' ? { ambiguous: toCallRecord(existing) } : undefined
}

export async function claim(db: Runtime['store']['db'], row: Insertable<CallsTable> & { id: string; created_at: number }): Promise<Claim> {
  for (let round = 0; round < 3; round++) {
    const inserted = await db
      .insertInto('calls')
      .values(row)
      .onConflict((oc) => oc.columns(['tenant', 'agent_id', 'idempotency_key']).doNothing())
      .executeTakeFirst()
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1) return { kind: 'claimed', id: row.id, resumesAmbiguous: false }
    const existing = await findByKey(db, row)
    if (!existing) continue
    const now = row.created_at
    const expired = existing.created_at <= now - IDEMPOTENCY_WINDOW_MS
    const stalePending = existing.status === 'pending' && existing.updated_at <= now - STALE_PENDING_MS
    if (!isReusable(existing, now)) return { kind: 'duplicate', record: toCallRecord(existing) }
    const { id: _id, ...fields } = row
    const taken = await db
      .updateTable('calls')
      .set({ ...fields, created_at: expired ? now : existing.created_at, trace_id: null, conversation_id: null, error: null })
      .where('id', '=', existing.id)
      .where('status', '=', existing.status)
      .where('updated_at', '=', existing.updated_at)
      .executeTakeFirst()
    if (Number(taken.numUpdatedRows) !== 1) continue
    // Within the window, a failed or pending row may already have created the call upstream.
    return { kind: 'claimed', id: existing.id, resumesAmbiguous: !expired && (existing.status === 'failed' || stalePending) }
  }
  const record = await findByKey(db, row)
  if (!record) throw new Error(`calls ledger: no row for idempotency key "${row.idempotency_key}" after repeated conflicts`)
  return { kind: 'duplicate', record: toCallRecord(record) }
}

export async function finish(
  rt: Runtime,
  id: string,
  fields: { status: CallStatus; trace_id?: string | null; conversation_id?: string | null; error?: string | null; scheduled_for?: number | null },
): Promise<CallRecord> {
  await rt.store.db
    .updateTable('calls')
    .set({ ...fields, updated_at: rt.clock.now() })
    .where('id', '=', id)
    .execute()
  const row = await rt.store.db.selectFrom('calls').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  return toCallRecord(row)
}

export function rateLimitHeaders(info: { limit?: number | undefined; remaining?: number | undefined; reset?: string | undefined; retryAfter?: number | undefined } | undefined): Headers {
  const headers = new Headers()
  if (info?.limit !== undefined) headers.set('x-ratelimit-limit', String(info.limit))
  if (info?.remaining !== undefined) headers.set('x-ratelimit-remaining', String(info.remaining))
  if (info?.reset !== undefined) headers.set('x-ratelimit-reset', info.reset)
  if (info?.retryAfter !== undefined) headers.set('retry-after', String(info.retryAfter))
  return headers
}

/** Transient failures leave it open whether the provider created the call. */
export function isAmbiguous(error: VoiceApiError): boolean {
  return error.status >= 500 || error.status === 0 || error.type === 'invalid_response'
}

/**
 * Places (or schedules) one call: the only way switchboard calls POST /v1/call (proxy and recipes).
 * Records the call first, sends it with an idempotency key (added when missing) retrying 5xx and network
 * errors with that same key, and records the outcome. A 429 is not waited for: it is returned, with its
 * Retry-After, and the key stays usable.
 */
/** The ledger row for a call about to be sent or queued (its idempotency key added when missing). */
export function ledgerRow(rt: Runtime, input: PlaceCallInput, status: CallStatus) {
  const now = rt.clock.now()
  const key = input.request.idempotency_key ?? timeOrderedId(now, rt.random)
  const request: CallRequest = { ...input.request, idempotency_key: key }
  const scheduledAt = request.scheduled_for ? Date.parse(request.scheduled_for) : NaN
  const phone = customerPhone(request)
  const row = {
    id: timeOrderedId(now, rt.random),
    tenant: tenantOf(input.apiKey),
    agent_id: request.agent_id,
    customer_phone: phone,
    customer_key: contactKey(phone, rt.config.defaultCountry),
    idempotency_key: key,
    trace_id: null,
    conversation_id: null,
    previous_conversation_id: input.previousConversationId ?? request.conversation_id ?? null,
    scheduled_for: Number.isFinite(scheduledAt) ? scheduledAt : null,
    parameters: JSON.stringify(request.parameters),
    retry_context: toJson(request.retry_context),
    metadata: toJson(request.metadata),
    recipe: input.recipe ?? null,
    campaign: input.campaign ?? null,
    status,
    error: null,
    created_at: now,
    updated_at: now,
  }
  return { request, row, key }
}

/** Every column of a ledger row, once (`satisfies` checks the list against `ledgerRow`: none missing, none extra). */
export const LEDGER_COLUMNS = Object.keys({
  id: 1, tenant: 1, agent_id: 1, customer_phone: 1, customer_key: 1, idempotency_key: 1, trace_id: 1, conversation_id: 1, previous_conversation_id: 1,
  scheduled_for: 1, parameters: 1, retry_context: 1, metadata: 1, recipe: 1, campaign: 1, status: 1, error: 1, created_at: 1, updated_at: 1,
} satisfies Record<keyof ReturnType<typeof ledgerRow>['row'], 1>) as Array<keyof ReturnType<typeof ledgerRow>['row']>

export async function placeCall(rt: Runtime, input: PlaceCallInput): Promise<PlaceCallResult> {
  const { request, row, key } = ledgerRow(rt, input, 'pending')
  const claimed = await claim(rt.store.db, row)
  if (claimed.kind === 'duplicate') return { ok: false, duplicate: true, record: claimed.record }

  let ambiguous = claimed.resumesAmbiguous
  const client = rt.clientFor(input.apiKey, {
    idempotency: 'never',
    retry: { maxRetryAfterMs: 0 },
    ...(input.budgetMs !== undefined ? { budgetMs: input.budgetMs } : {}),
    onRetry: ({ error }) => {
      if (isAmbiguous(error)) ambiguous = true
      rt.log.warn({ agent_id: request.agent_id, idempotency_key: key, status: error.status, type: error.type }, 'retrying call creation')
    },
  })
  const acceptedStatus: CallStatus = request.scheduled_for ? 'scheduled' : 'initiated'
  try {
    // A 2xx is a placed call whatever its body says (createCallRaw never refuses one): recorded as such, with
    // what the body has, so that neither the ledger nor the caller reports it failed and invites a second call.
    const { call, status, body, contentType, unexpectedShape } = await client.createCallRaw(request)
    if (unexpectedShape !== undefined) {
      rt.log.warn({ agent_id: request.agent_id, idempotency_key: key, status, issue: unexpectedShape }, 'the provider accepted the call with an answer off the documented shape; recorded as placed')
    }
    const record = await finish(rt, claimed.id, {
      status: call.status === 'scheduled' ? 'scheduled' : 'initiated',
      trace_id: call.trace_id || null,
      conversation_id: call.conversation_id,
      error: null,
    })
    return { ok: true, call, record, headers: rateLimitHeaders(client.lastRateLimit), answer: { status, body, contentType } }
  } catch (cause) {
    const error =
      cause instanceof VoiceApiError
        ? cause
        : new VoiceApiError({ type: 'network_error', status: 0, message: (cause as Error).message ?? String(cause), cause })
    if (error.type === 'duplicate_request' && ambiguous) {
      // Our own earlier attempt created the call and its answer was lost: the call exists.
      const record = await finish(rt, claimed.id, {
        status: acceptedStatus,
        trace_id: null,
        error: 'accepted by an earlier attempt whose answer was lost; trace id unknown',
      })
      const call: CallResponse = {
        agent_id: request.agent_id,
        conversation_id: null,
        scheduled_for: request.scheduled_for ?? null,
        status: acceptedStatus,
        trace_id: '',
      }
      return { ok: true, call, record, headers: rateLimitHeaders(error.rateLimit), recovered: true }
    }
    // `failed` whenever an attempt may have placed the call — this one's error, an earlier attempt's lost answer (a
    // 429 after a 502, say), or a row taken over as ambiguous — so that a retry with the key goes to the provider and
    // its 409 is read as the call existing. `rejected` only when no attempt can have placed it.
    const mayExist = ambiguous || error.mayHaveBeenPlaced || isAmbiguous(error)
    const record = await finish(rt, claimed.id, {
      status: mayExist ? 'failed' : 'rejected',
      error: `${error.type}: ${error.message}`,
    })
    return { ok: false, duplicate: false, error, record }
  }
}
