import type { Selectable } from 'kysely'
import type { CallQueueTable } from '../db/schema.ts'
import { inClaimSubquery } from '../db/in-claim-subquery.ts'
import { insertRows } from '../db/insert-rows.ts'
import type { Runtime } from '../runtime.ts'
import { workspaceKey as configuredWorkspaceKey } from '../config/workspace-key.ts'
import { VoiceApiError } from '../upstream/errors.ts'
import { ERROR_TYPES, type CallRequest } from '../upstream/schemas.ts'
import { backoffMs } from '../utils/backoff.ts'
import { chunks } from '../utils/chunks.ts'
import { logRepeatedError } from '../utils/repeated-error-log.ts'
import { createGroupCommit, type GroupCommit } from '../utils/group-commit.ts'
import { yieldToReceiver } from '../coordination/receiver-load.ts'
import { callMetrics, callQueueDepth } from './metrics.ts'
import { createPacer, type Pacer } from './pacer.ts'
import { claim, finish, IDEMPOTENCY_WINDOW_MS, isAmbiguous, LEDGER_COLUMNS, ledgerRow, type PlaceCallInput } from './place-call.ts'
import { isBlocked } from '../campaigns/dnc.ts'
import type { CallRecord } from './record.ts'
import { tenantOf } from './tenant.ts'
import { requestInWindow, windowColumn } from './window-at-send.ts'
import { toCallRecord } from './record.ts'

type QueueRow = Selectable<CallQueueTable>

const claimMs = (rt: Runtime) => rt.config.upstreamTimeoutMs + CLAIM_MARGIN_MS

/**
 * A claimed call is protected for one send (UPSTREAM_TIMEOUT_MS) and this margin; the client does not
 * retry on its own (the queue requeues transient failures), so a send never outlives its claim, and the
 * calls of a killed process are sent again soon.
 */
const CLAIM_MARGIN_MS = 15_000
const SWEEP_MS = 1_000
/** Transient failures (5xx, network) are retried at least this many sends in all; 429s never count against it. */
const MAX_TRANSIENT_ATTEMPTS = 8
/**
 * ...and for at least this long after the call was queued: eight sends with backoff span about four minutes, and a
 * provider outage of ten minutes failed every call queued before it (follow-ups are planned again by the sweep; a
 * call a recipe queued was lost). The key stays valid for 24 h, so sending again is safe.
 */
const TRANSIENT_RETRY_WINDOW_MS = 60 * 60_000
/** A 429 without Retry-After or X-RateLimit-Reset waits this long. */
const DEFAULT_429_WAIT_MS = 5_000

export type EnqueueResult = { ok: true; record: CallRecord } | { ok: false; duplicate: true; record: CallRecord }

interface QueueState {
  /** API keys by tenant hash: keys are never stored, so only the workspace key survives a restart. */
  keys: Map<string, string>
  pacer: Pacer
  runner: CallQueue | undefined
  /** Sent calls' outcomes, committed together (see `settle`). */
  outcomes: GroupCommit<Settlement>
}

/** A sent call's outcome: the fields its ledger row takes, and the claim its queue row is deleted under. */
interface Settlement {
  id: string
  owner: string
  fields: Parameters<typeof finish>[2]
  at: number
}

const states = new WeakMap<Runtime, QueueState>()

function stateOf(rt: Runtime): QueueState {
  let s = states.get(rt)
  if (!s) {
    const workspaceKey = configuredWorkspaceKey(rt.config)
    states.set(rt, (s = { keys: new Map([[tenantOf(workspaceKey), workspaceKey]]), pacer: createPacer(), runner: undefined, outcomes: createGroupCommit((batch) => writeSettlements(rt, batch)) }))
  }
  return s
}

/** Calls queued per transaction: one commit for many, yet the write lock is never held for long. */
const ENQUEUE_CHUNK = 100

/**
 * Queues calls: for each, the ledger row (status `queued`, the idempotency key fixed now) and the queue row
 * in one transaction — up to ENQUEUE_CHUNK calls per transaction — so a crash keeps both or neither. The
 * same key queued again within 24 h is a duplicate. In a process where no queue runs (a CLI command), the
 * calls are sent at once; a 429 leaves them queued for the service. Results are in the order given.
 */
export async function enqueueCalls(rt: Runtime, inputs: PlaceCallInput[]): Promise<EnqueueResult[]> {
  const state = stateOf(rt)
  const results: EnqueueResult[] = []
  for (const inputChunk of chunks(inputs, ENQUEUE_CHUNK)) {
    const chunk = inputChunk.map((input) => {
      state.keys.set(tenantOf(input.apiKey), input.apiKey)
      return { ...ledgerRow(rt, input, 'queued'), window: windowColumn(input.window) }
    })
    const now = rt.clock.now()
    results.push(
      ...(await rt.store.db.transaction().execute(async (trx) => {
        // One multi-row INSERT for the chunk's ledger rows and one for their queue rows: the write lock is
        // held for two statements, not two hundred (the receiver's commits wait on this same lock).
        const fresh = new Set(
          (
            await insertRows(trx, rt.store.dialect, 'calls', LEDGER_COLUMNS, chunk.map((c) => c.row), {
              onConflict: { columns: ['tenant', 'agent_id', 'idempotency_key'] },
              returning: ['id'],
            })
          ).map((r) => r.id),
        )
        const done: EnqueueResult[] = []
        const queued: Array<{ id: string; tenant: string; request: CallRequest; window: string | null; sentBefore: boolean }> = []
        for (const { request, row, window } of chunk) {
          if (fresh.has(row.id)) {
            done.push({ ok: true, record: toCallRecord(row) })
            queued.push({ id: row.id, tenant: row.tenant, request, window, sentBefore: false })
            continue
          }
          // The key is taken (an earlier call, or a copy within this chunk): the one-row path decides
          // between a duplicate and a reusable row (expired, failed, refused).
          const claimed = await claim(trx, row)
          if (claimed.kind === 'duplicate') {
            done.push({ ok: false, duplicate: true, record: claimed.record })
            continue
          }
          const stored = await trx.selectFrom('calls').selectAll().where('id', '=', claimed.id).executeTakeFirstOrThrow()
          done.push({ ok: true, record: toCallRecord(stored) })
          // A key whose earlier call ended ambiguous (failed after timeouts, within the 24 h window) may have placed
          // the call: queued as sent once already, so the provider's duplicate_request is read as "accepted then"
          // (recorded, no second call) rather than as a refusal — a `rejected` row would be planned again, and
          // called again once the provider's window for the key had passed.
          queued.push({ id: claimed.id, tenant: row.tenant, request, window, sentBefore: claimed.resumesAmbiguous })
        }
        if (queued.length > 0) {
          await trx
            .insertInto('call_queue')
            .values(
              queued.map((q) => ({
                id: q.id,
                tenant: q.tenant,
                request: JSON.stringify(q.request),
                attempts: q.sentBefore ? 1 : 0,
                next_attempt_at: now,
                claimed_by: null,
                claimed_until: null,
                enqueued_at: now,
                last_error: null,
                calling_window: q.window,
              })),
            )
            .onConflict((oc) =>
              oc.column('id').doUpdateSet((eb) => ({
                request: eb.ref('excluded.request'),
                calling_window: eb.ref('excluded.calling_window'),
                attempts: eb.ref('excluded.attempts'),
                next_attempt_at: eb.ref('excluded.next_attempt_at'),
                claimed_by: null,
                claimed_until: null,
                last_error: null,
              })),
            )
            .execute()
        }
        return done
      })),
    )
  }
  if (results.some((r) => r.ok)) {
    if (state.runner) state.runner.wake()
    else for (const r of results) if (r.ok) await sendNow(rt, r.record.id)
  }
  return results
}

/** Queues one call (see `enqueueCalls`). */
export async function enqueueCall(rt: Runtime, input: PlaceCallInput): Promise<EnqueueResult> {
  const [result] = await enqueueCalls(rt, [input])
  return result!
}

/**
 * Claims up to `limit` due calls for `owner` (each claim counts as a send attempt), leaving out the calls of
 * `heldTenants` (waiting on the provider's limits: claimed now, they could only be put back).
 */
async function claimDueCalls(rt: Runtime, owner: string, limit: number, heldTenants: string[]): Promise<QueueRow[]> {
  const now = rt.clock.now()
  const db = rt.store.db
  // Only calls this process can send: a call queued with another API key (a recipe's own, never stored) waits for
  // the process that queued it — a replica claiming it could only fail it. Past the key's 24 h idempotency window
  // it is claimed all the same, and failed with a clear error, rather than kept for ever.
  const known = [...stateOf(rt).keys.keys()]
  let due = db
    .selectFrom('call_queue')
    .select('id')
    .where('next_attempt_at', '<=', now)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
    .where((eb) => eb.or([eb('tenant', 'in', known), eb('enqueued_at', '<=', now - IDEMPOTENCY_WINDOW_MS)]))
  if (heldTenants.length > 0) due = due.where('tenant', 'not in', heldTenants)
  due = due
    .orderBy('next_attempt_at')
    .orderBy('enqueued_at')
    .limit(limit)
  if (rt.store.dialect === 'postgres') due = due.forUpdate().skipLocked()
  return db
    .updateTable('call_queue')
    .set((eb) => ({ claimed_by: owner, claimed_until: now + claimMs(rt), attempts: eb('attempts', '+', 1) }))
    .where(inClaimSubquery(rt.store.dialect, 'id', due))
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
    .returningAll()
    .execute()
}

/**
 * Gives a claimed call back to the queue, due at `at`. Every claim counts one attempt; `uncounted` takes it back
 * for a claim that cannot have placed the call — held back by the pacer before sending, or refused with a 429 —
 * so that waiting on the provider's limits never uses up the budget of sends that may have reached it
 * (MAX_TRANSIENT_ATTEMPTS), and `attempts > 1` still means "sent before" when a duplicate_request comes back.
 */
async function requeue(rt: Runtime, row: QueueRow, owner: string, at: number, error: string | null, options: { uncounted?: boolean } = {}): Promise<void> {
  await rt.store.db
    .updateTable('call_queue')
    .set((eb) => ({
      next_attempt_at: at,
      claimed_by: null,
      claimed_until: null,
      last_error: error,
      ...(options.uncounted ? { attempts: eb('attempts', '-', 1) } : {}),
    }))
    .where('id', '=', row.id)
    .where('claimed_by', '=', owner)
    .execute()
}

/**
 * A queued call's outcome: its ledger row updated and its queue row removed in the same transaction, so no
 * crash between them leaves a placed call queued (it would go out again, be answered `duplicate_request`,
 * and lose its trace id). Outcomes that land together share the transaction (group commit): one commit per
 * call was most of the queue's cost on the processing thread (two commits a call with the claim, ~0.7 ms
 * each on SQLite). Resolves once committed.
 */
function settle(rt: Runtime, row: QueueRow, owner: string, fields: Parameters<typeof finish>[2]): Promise<void> {
  return stateOf(rt).outcomes.add({ id: row.id, owner, fields, at: rt.clock.now() })
}

const SETTLE_CHUNK = 500

async function writeSettlements(rt: Runtime, batch: Settlement[]): Promise<void> {
  // Rows in id order, so two processes' transactions never take the same locks in opposite orders.
  const sorted = [...batch].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  const byOwner = new Map<string, string[]>()
  for (const s of sorted) {
    const ids = byOwner.get(s.owner)
    if (ids) ids.push(s.id)
    else byOwner.set(s.owner, [s.id])
  }
  await rt.store.db.transaction().execute(async (trx) => {
    // Only while the call is still this sender's: a process frozen past its claim (a VM pause, a clock stepping
    // forward) resumes its send after another claimed and placed the call, and its late answer — a 409
    // duplicate_request read as a refusal — must not overwrite the ledger the other one wrote.
    for (const s of sorted) {
      await trx
        .updateTable('calls')
        .set({ ...s.fields, updated_at: s.at })
        .where('id', '=', s.id)
        .where(({ exists, selectFrom }) => exists(selectFrom('call_queue as q').select('q.id').whereRef('q.id', '=', 'calls.id').where('q.claimed_by', '=', s.owner)))
        .execute()
    }
    for (const [owner, ids] of byOwner) {
      for (const chunk of chunks(ids, SETTLE_CHUNK)) await trx.deleteFrom('call_queue').where('claimed_by', '=', owner).where('id', 'in', chunk).execute()
    }
  })
}

/** Seconds from a 429: Retry-After, else X-RateLimit-Reset, else a default. */
function waitFor429(error: VoiceApiError, now: number): number {
  if (error.rateLimit.retryAfter !== undefined) return Math.max(1_000, error.rateLimit.retryAfter * 1000)
  const reset = error.rateLimit.resetAt
  if (reset !== undefined && reset > now) return reset - now
  return DEFAULT_429_WAIT_MS
}

/**
 * Sends one claimed call with its idempotency key and records the outcome. A 429 is never a failure: the
 * call waits (the whole tenant for a rate or concurrency limit, just this call for its number's limit)
 * and goes again with the same key. A `duplicate_request` on a call sent before (a send whose answer was
 * lost, or a process killed mid-send) means the provider already has it: recorded as accepted.
 */
async function send(rt: Runtime, row: QueueRow, owner: string): Promise<void> {
  const state = stateOf(rt)
  const metrics = callMetrics(rt.metrics)
  const queuedRequest = JSON.parse(row.request) as CallRequest
  // What the provider's checklist asks each call's lines to carry: the agent and the campaign (its trace id once placed).
  const campaign = queuedRequest.parameters.find((p) => p.name === 'campaign')?.value
  const log = rt.log.child({ component: 'call-queue', call_id: row.id, agent_id: queuedRequest.agent_id, ...(campaign ? { campaign } : {}) })
  const apiKey = state.keys.get(row.tenant)
  if (!apiKey) {
    await settle(rt, row, owner, { status: 'failed', error: 'queued with an API key this process does not know (keys are never stored); place it again' })
    metrics.failed.inc({ reason: 'no_api_key' })
    return
  }
  // The do-not-call list again, as it is now: a number put on it while the call waited (an opt-out in another
  // campaign's call, an import) is not called. The table and the default file (DATA_DIR/dnc.csv); the number is E.164.
  const phone = queuedRequest.parameters.find((p) => p.name === 'customer_phone')?.value
  if (phone !== undefined && (await isBlocked(rt, phone))) {
    // Not sent again either way. But a row claimed before (an attempt whose answer was lost, or a process killed
    // mid-send: 429s and pacing waits give their attempt back) may have placed the call already: `failed` says
    // "may exist", where `rejected` would tell the ledger, the report and the follow-up planner it never happened.
    const sentBefore = row.attempts > 1
    await settle(rt, row, owner, {
      status: sentBefore ? 'failed' : 'rejected',
      error: sentBefore
        ? 'on the do-not-call list (added after the call was queued): not sent again, but an earlier attempt whose answer was lost may have placed it'
        : 'on the do-not-call list (added after the call was queued): not called',
    })
    metrics.failed.inc({ reason: 'dnc' })
    log.info('queued call not placed: its number was put on the do-not-call list while it waited')
    return
  }
  const notBefore = state.pacer.notBefore(row.tenant, rt.clock.now())
  if (notBefore > rt.clock.now()) {
    await requeue(rt, row, owner, notBefore, row.last_error, { uncounted: true })
    return
  }
  if (state.pacer.atCapacity(row.tenant, rt.clock.now())) {
    // Due again at once: the pacer keeps the tenant's calls unclaimed while it is at capacity (`held`), and the send that
    // frees a slot wakes the queue — a first answer most of all, which opens a fresh process up (pacer.atCapacity).
    await requeue(rt, row, owner, rt.clock.now(), row.last_error, { uncounted: true })
    return
  }
  // Held back past its window's close (by the provider's limits), a call moves to the next opening.
  const { request, movedTo } = requestInWindow(queuedRequest, row.calling_window, rt.clock.now())
  if (movedTo !== undefined) log.info({ scheduled_for: request.scheduled_for }, 'queued call reached the front outside its calling window; scheduled for the next opening')
  const client = rt.clientFor(apiKey, { idempotency: 'never', retry: { retries: 0, maxRetryAfterMs: 0 } })
  state.pacer.started(row.tenant, rt.clock.now())
  try {
    const call = await client.createCall(request)
    state.pacer.finished(row.tenant, client.lastRateLimit, rt.clock.now())
    state.pacer.accepted(row.tenant)
    const status = call.status === 'scheduled' ? 'scheduled' : 'initiated'
    const moved = movedTo !== undefined ? { scheduled_for: movedTo } : {}
    await settle(rt, row, owner, { status, trace_id: call.trace_id, conversation_id: call.conversation_id, error: null, ...moved })
    metrics.placed.inc({ status })
    log.info({ trace_id: call.trace_id, status, scheduled_for: request.scheduled_for ?? null }, 'queued call placed')
  } catch (cause) {
    const error =
      cause instanceof VoiceApiError ? cause : new VoiceApiError({ type: 'network_error', status: 0, message: (cause as Error).message ?? String(cause), cause })
    const now = rt.clock.now()
    state.pacer.finished(row.tenant, error.rateLimit, now)
    if (error.status === 429) {
      const wait = waitFor429(error, now)
      const reason = error.type === 'concurrent_call_limit_exceeded' ? 'concurrency_limit' : /number/i.test(error.message) ? 'number_rate_limit' : 'rate_limit'
      if (reason === 'concurrency_limit') state.pacer.limitConcurrency(row.tenant, now + wait, error.maxCalls)
      else if (reason !== 'number_rate_limit') state.pacer.block(row.tenant, now + wait)
      metrics.retried.inc({ reason })
      log.info({ reason, wait_ms: wait, current_calls: error.currentCalls, max_calls: error.maxCalls }, 'provider limit reached; the call waits and goes again with the same idempotency key')
      await requeue(rt, row, owner, now + wait, `${error.type}: ${error.message}`, { uncounted: true })
      return
    }
    if (error.type === 'duplicate_request' && row.attempts > 1) {
      const status = request.scheduled_for ? 'scheduled' : 'initiated'
      await settle(rt, row, owner, { status, trace_id: null, error: 'accepted by an earlier attempt whose answer was lost; trace id unknown' })
      metrics.placed.inc({ status: 'recovered' })
      return
    }
    if (isAmbiguous(error) && (row.attempts < MAX_TRANSIENT_ATTEMPTS || now - row.enqueued_at < TRANSIENT_RETRY_WINDOW_MS)) {
      metrics.retried.inc({ reason: 'transient' })
      await requeue(rt, row, owner, now + backoffMs(row.attempts, rt.random.next), `${error.type}: ${error.message}`)
      return
    }
    await settle(rt, row, owner, { status: isAmbiguous(error) ? 'failed' : 'rejected', error: `${error.type}: ${error.message}` })
    metrics.failed.inc({ reason: failureReason(error.type) })
    log.warn({ type: error.type, status: error.status, err: error.message }, 'queued call not placed; calls list shows it with this error')
  }
}

/** Label values the failure counter takes: the spec's error types and the client's own; anything else a provider (or a
 * gateway in front of it) sends as `type` is `other`, so a label cannot grow without bound. */
const FAILURE_REASONS: ReadonlySet<string> = new Set([...ERROR_TYPES, 'network_error', 'timeout', 'invalid_response'])
function failureReason(type: string): string {
  return FAILURE_REASONS.has(type) ? type : 'other'
}

/** A process with no queue running sends a call it just queued itself (once; a 429 leaves it queued). */
async function sendNow(rt: Runtime, id: string): Promise<void> {
  const owner = `${rt.instanceId}:direct`
  const now = rt.clock.now()
  const row = await rt.store.db
    .updateTable('call_queue')
    .set((eb) => ({ claimed_by: owner, claimed_until: now + claimMs(rt), attempts: eb('attempts', '+', 1) }))
    .where('id', '=', id)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
    .returningAll()
    .executeTakeFirst()
  if (row) await send(rt, row, owner)
}

export interface CallQueue {
  wake(): void
  /** Resolves when nothing is being claimed or sent. */
  idle(): Promise<void>
  stop(): Promise<void>
}

/**
 * The paced outbound queue's runner (worker role): up to CALL_QUEUE_CONCURRENCY sends at once, each
 * tenant paced by what the provider's answers said (remaining quota until its reset, Retry-After after a
 * 429). Woken when a call is queued here; a sweep on the runtime's clock picks up retries that fell due,
 * calls queued by other processes and calls a killed process had claimed (their claims lapse).
 */
export function startCallQueue(rt: Runtime): CallQueue {
  const state = stateOf(rt)
  const owner = `${rt.instanceId}:calls`
  const concurrency = rt.config.pipeline.callConcurrency
  // Listed from the start, at zero: the counters and the depth.
  callMetrics(rt.metrics)
  const depthGauge = callQueueDepth(rt.metrics)
  const sending = new Set<Promise<void>>()
  /** The ids of the calls being sent. */
  const inFlight = new Set<string>()
  let pass: Promise<void> | undefined
  let again = false
  let stopped = false
  let cancelSweep: (() => void) | undefined
  let released: { at: number; cancel: () => void } | undefined
  let depthReadAt = -Infinity

  /** Looks again when a held tenant may send (sooner than the sweep would). */
  function wakeWhenReleased(at: number): void {
    if (released && released.at <= at) return
    released?.cancel()
    const cancel = rt.clock.setTimeout(() => {
      released = undefined
      wake()
    }, Math.max(0, at - rt.clock.now()))
    released = { at, cancel }
  }

  async function pump(): Promise<void> {
    do {
      again = false
      while (!stopped && sending.size < concurrency) {
        // In the processing thread, a burst at the receiver goes first (src/coordination/receiver-load.ts).
        await yieldToReceiver(rt)
        if (stopped) break
        // A tenant waiting on the provider's limits keeps its calls unclaimed: after a campaign's burst,
        // thousands of follow-ups wait on a 600-a-minute limit, and claiming each only to put it back was a
        // claim and a write per call, again and again, on the processing thread.
        const held = state.pacer.held(rt.clock.now())
        if (held.size > 0) wakeWhenReleased(Math.min(...held.values()))
        // Calls of tenants this process has no key for are failed when sent; they can wait for a release.
        if (held.size > 0 && [...state.keys.keys()].every((tenant) => held.has(tenant))) break
        // No more than the provider's pace lets go now (src/calls/pacer.ts): a call claimed beyond it could only be put back.
        const now = rt.clock.now()
        let allowed = 0
        for (const tenant of state.keys.keys()) if (!held.has(tenant)) allowed += state.pacer.allowance(tenant, now)
        const rows = await claimDueCalls(rt, owner, Math.min(concurrency - sending.size, Math.max(1, allowed)), [...held.keys()])
        if (rows.length === 0) break
        for (const row of rows) {
          // Claimed again while this process still sends it (its claim lapsed: the clock stepped forward, or the
          // provider held the request past the claim): the send under way settles it; a second POST would not.
          if (inFlight.has(row.id)) continue
          inFlight.add(row.id)
          const p: Promise<void> = send(rt, row, owner)
            .catch((error) => rt.log.error({ err: (error as Error).message, call_id: row.id }, 'sending a queued call failed; its claim lapses and it is retried'))
            .finally(() => {
              sending.delete(p)
              inFlight.delete(row.id)
              wake()
            })
          sending.add(p)
        }
      }
      // The depth gauge is read at most once a sweep: a pass runs after every send.
      if (rt.clock.now() - depthReadAt >= SWEEP_MS) {
        depthReadAt = rt.clock.now()
        const depth = await rt.store.db.selectFrom('call_queue').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst()
        depthGauge.set(Number(depth?.n ?? 0))
      }
    } while (again && !stopped)
  }

  function wake(): void {
    if (stopped) return
    if (pass) {
      again = true
      return
    }
    pass = pump()
      .catch((error) => logRepeatedError(rt, { err: (error as Error).message }, 'call queue pass failed; will try again'))
      .finally(() => {
        pass = undefined
        if (again) wake()
      })
  }

  function sweep(): void {
    if (stopped) return
    wake()
    cancelSweep = rt.clock.setTimeout(sweep, SWEEP_MS)
  }

  const queue: CallQueue = {
    wake,
    async idle() {
      for (let i = 0; i < 1000 && (pass || sending.size > 0); i++) await Promise.allSettled([pass, ...sending])
    },
    async stop() {
      stopped = true
      cancelSweep?.()
      released?.cancel()
      if (state.runner === queue) state.runner = undefined
      await Promise.allSettled([pass, ...sending])
    },
  }
  state.runner = queue
  sweep()
  return queue
}
