import type { Runtime } from '../runtime.ts'
import {
  eventTypeOfStatus,
  formatWebhookTranscript,
  isTerminalStatus,
  type ConversationDetail,
  type ConversationListItem,
  type WebhookEventBody,
} from '../upstream/schemas.ts'
import { pendingRow } from './inbox.ts'
import { keyedLookup } from './keyed-lookup.ts'
import { acquireLease, releaseLease } from '../coordination/lease.ts'
import { webhookMetrics } from './metrics.ts'
import { webhookState } from './state.ts'
import { contactIn, contactNumbers } from '../campaigns/contact-lookup.ts'
import { fromJsonOrNull } from '../db/json.ts'
import { ledgerParameters } from '../campaigns/ledger-parameters.ts'
import type { RetryContext } from '../upstream/schemas.ts'
import { isVoiceApiError } from '../upstream/errors.ts'
import { rememberedDays } from './forgotten-event.ts'
import { chainAttempt } from '../campaigns/conversation-chain.ts'
import type { PipelineEvent } from '../events/hooks.ts'
import { providerTimeMs } from '../utils/iso-datetime.ts'

export interface ReconcileOptions {
  /** Pages of 100 to read at most per run (bounds the cost of a run). */
  maxPages?: number
  /**
   * Conversations that ended less than this long ago are left to the provider's own webhook retries
   * (0 s, 30 s, 300 s), so a late webhook and reconciliation rarely both fire. Default: 6 minutes,
   * divided by SANDBOX_SPEED in sandbox mode.
   */
  graceMs?: number
  /** The service is stopping: the run ends after the request under way (`stopped` in the result). */
  signal?: AbortSignal
}

export interface ReconcileResult {
  skipped: boolean
  pages: number
  listed: number
  /** Details fetched (missing or not yet terminal here, terminal upstream). */
  fetched: number
  /** Events synthesized and queued. */
  synthesized: number
  /** The run stopped early: another replica took its lease (it had expired while the provider was slow). */
  lostLease?: boolean
  /** The run stopped early: the service is stopping (the next run, on this replica or another, goes on). */
  stopped?: boolean
  eventIds: string[]
  /**
   * Conversations the provider listed but would not give (a 404, a body that does not parse): each skipped with its
   * error, the run going on — one such conversation ended every run before it reached any older one.
   */
  unreadable: Array<{ conversationId: string; error: string }>
  /** Conversations that ended before the oldest events kept (EVENT_RETENTION_DAYS): never queued, as the receiver refuses them. */
  tooOld: number
  /** The provider had more than the pages one run reads (`maxPages`): the oldest of them were not looked at. */
  more: boolean
}

const LEASE = 'webhooks:reconcile'
const PAGE = 100
const PROVIDER_RETRY_HORIZON_MS = 6 * 60_000

function iso(ms: number | undefined): string | null {
  return ms === undefined || !Number.isFinite(ms) || ms <= 0 ? null : new Date(ms).toISOString()
}

/** What switchboard placed a call with (its calls ledger): the webhook's `call_parameters` and `retry_context`. */
export interface PlacedWith {
  parameters: Record<string, string>
  retryContext: RetryContext | null
}

/** How long before a conversation started an untraced call to its number may have been placed and still be its call. */
const UNTRACED_WITHIN_MS = 24 * 3_600_000

/**
 * The parameters and retry context switchboard placed a reconciled conversation's call with, from the calls ledger —
 * the provider's conversation has neither, and without them its follow-up went out with the number alone (no name, no
 * `collected_data`), under `agent:<id>`, and the report filed the call under `(direct)`. The call by its trace id or
 * conversation; else, a call whose answer was lost (no trace id, no conversation), the latest such call to the same
 * number by the same agent in the day before the conversation started. Undefined when switchboard did not place it
 * (a batch's rows are the provider's: their columns come only with their webhooks).
 */
export async function placedWith(rt: Runtime, item: ConversationListItem, detail: ConversationDetail): Promise<PlacedWith | undefined> {
  const columns = ['parameters', 'retry_context'] as const
  let row = await rt.store.db
    .selectFrom('calls')
    .select(columns)
    .where((eb) => eb.or([...(detail.trace_id ? [eb('trace_id', '=', detail.trace_id)] : []), eb('conversation_id', '=', detail.conversation_id)]))
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirst()
  const started = item.start_timestamp > 0 ? item.start_timestamp : undefined
  if (!row && started !== undefined) {
    row = await rt.store.db
      .selectFrom('calls')
      .select(columns)
      .where('agent_id', '=', detail.agent_id)
      .where('trace_id', 'is', null)
      .where('conversation_id', 'is', null)
      .where('status', 'not in', ['failed', 'rejected'])
      .where('created_at', '<=', started)
      .where('created_at', '>=', started - UNTRACED_WITHIN_MS)
      .where(contactIn(rt.store.dialect, 'calls', contactNumbers([{ number: detail.contact_number }], rt.config.defaultCountry)))
      .orderBy('created_at', 'desc')
      .limit(1)
      .executeTakeFirst()
  }
  if (!row) return undefined
  const context = fromJsonOrNull<unknown>(row.retry_context)
  return { parameters: ledgerParameters(row.parameters), retryContext: context !== null && typeof context === 'object' && !Array.isArray(context) ? (context as RetryContext) : null }
}

/** A WebhookEvent-shaped body for what the provider's API says, so it runs through the same processing. */
export function synthesizeEvent(item: ConversationListItem, detail: ConversationDetail, nowMs: number, placed?: PlacedWith): WebhookEventBody {
  const status = detail.status
  // A provider-specific status is reported as its own `call.<status>`, as its webhook would be.
  const eventType = eventTypeOfStatus(status)
  const transcript = detail.transcript && detail.transcript.length > 0 ? formatWebhookTranscript(detail.transcript) : null
  return {
    event_id: `reconcile:${detail.conversation_id}:${status}`,
    event_type: eventType,
    timestamp: iso(item.end_timestamp) ?? new Date(nowMs).toISOString(),
    source: 'reconcile',
    data: {
      call: {
        agent_id: detail.agent_id,
        call_parameters: placed?.parameters ?? {},
        conversation_id: detail.conversation_id,
        duration_seconds: detail.duration_seconds,
        started_at: iso(item.start_timestamp),
        ended_at: iso(item.end_timestamp),
        failure_reason: detail.failure_reason,
        from_phone: null,
        to_phone: detail.contact_number,
        recording_url: detail.recording_url ?? null,
        status,
        trace_id: detail.trace_id,
      },
      results: detail.results,
      retry: null,
      retry_context: placed?.retryContext ?? null,
      transcript,
    },
  }
}

/** How long after a conversation ends reconciliation leaves it to the provider's own webhook retries. */
export function reconcileGraceMs(rt: Runtime): number {
  return rt.config.sandboxMode ? PROVIDER_RETRY_HORIZON_MS / rt.config.sandbox.speed : PROVIDER_RETRY_HORIZON_MS
}

/**
 * The provider's webhooks in `events` that bring an outcome reconciliation already queued (its event
 * `reconcile:<conversation_id>:<status>` is stored): a delivery the provider retried past the grace, or one re-sent by
 * hand. Stored under its own id, it ran every recipe and destination a second time. Only a webhook for a conversation
 * that ended before the grace can be one (reconciliation waits that long), so a live campaign's events cost no read.
 */
export async function reconciledBefore(rt: Runtime, events: readonly PipelineEvent[]): Promise<Set<string>> {
  const before = rt.clock.now() - reconcileGraceMs(rt)
  const late = new Map<string, string>()
  for (const e of events) {
    if (e.kind === 'target' || e.source !== 'webhook') continue
    const call = e.event.data.call
    const ended = call.ended_at ? providerTimeMs(call.ended_at) : NaN
    if (!call.conversation_id || !(ended <= before)) continue
    late.set(`reconcile:${call.conversation_id}:${call.status}`, e.eventId)
  }
  if (late.size === 0) return new Set()
  const found = await rt.store.db.selectFrom('webhook_events').select('event_id').where('event_id', 'in', [...late.keys()]).execute()
  return new Set(found.map((r) => late.get(r.event_id)!))
}

/**
 * Lists conversations upstream and queues a synthesized event (`source: 'reconcile'`, event id
 * `reconcile:<conversation_id>:<status>`, so re-running never duplicates) for every terminal one the
 * read model lacks or still has as non-terminal, unless a webhook for it is already stored. One replica
 * at a time (lease). The worker processes what was queued, with every hook.
 */
export async function reconcile(rt: Runtime, options: ReconcileOptions = {}): Promise<ReconcileResult> {
  const result: ReconcileResult = { skipped: false, pages: 0, listed: 0, fetched: 0, synthesized: 0, eventIds: [], unreadable: [], tooOld: 0, more: false }
  // As the receiver's stale_event: a conversation that ended before the ids the retention purge forgets is not a
  // missed webhook to act on now (a first start beside a workspace's history queued 5,000 of them, each run by recipes
  // and forwarded; and, its event purged, the same one would come back every month).
  const oldestKept = rt.clock.now() - (rememberedDays(rt.config.webhook.retentionDays) - 1) * 86_400_000
  const leaseMs = 10 * 60_000
  if (!(await acquireLease(rt, LEASE, leaseMs))) return { ...result, skipped: true }
  const metrics = webhookMetrics(rt.metrics)
  const { inbox, worker } = webhookState(rt)
  const signal = options.signal
  const client = rt.workspaceClient(signal ? { signal } : {})
  const grace = options.graceMs ?? reconcileGraceMs(rt)
  // A run can outlast its lease when the provider is slow (a page is up to 100 detail requests, each retried): the
  // lease is renewed as the run goes, and a run that finds it taken by another replica meanwhile stops there.
  let renewedAt = rt.clock.now()
  const stillOurs = async (): Promise<boolean> => {
    if (rt.clock.now() - renewedAt < leaseMs / 4) return true
    renewedAt = rt.clock.now()
    if (await acquireLease(rt, LEASE, leaseMs)) return true
    result.lostLease = true
    rt.log.warn({ pages: result.pages }, 'reconciliation stopped: another replica took over its lease while the provider was slow')
    return false
  }
  try {
    const maxPages = options.maxPages ?? 50
    /**
     * Per chain (`conv_abc` of `conv_abc_2`), the latest attempt listed that has not settled (still running, or ended
     * within the grace): an earlier attempt is left for a later run while one after it is unsettled. Reconciled alone, its
     * event has no `retry` block (the provider's conversation has none), so it read as the final attempt — a follow-up
     * was planned beside the platform's own next attempt, one call past the agent's limit. The list is newest first: a
     * later attempt comes before the earlier ones, on this page or an earlier one.
     */
    const unsettled = new Map<string, number>()
    pages: for (let page = 0; page < maxPages; page++) {
      if (signal?.aborted || !(await stillOurs())) break
      const list = await client.listConversations({ limit: PAGE, offset: page * PAGE })
      result.pages++
      result.listed += list.data.length
      const now = rt.clock.now()
      const settled = (c: ConversationListItem) => isTerminalStatus(c.status) && (!c.end_timestamp || c.end_timestamp <= now - grace)
      for (const c of list.data) {
        const at = chainAttempt(c.conversation_id)
        if (at && !settled(c)) unsettled.set(at.chain, Math.max(unsettled.get(at.chain) ?? 0, at.attempt))
      }
      const laterUnsettled = (c: ConversationListItem) => {
        const at = chainAttempt(c.conversation_id)
        return at !== undefined && (unsettled.get(at.chain) ?? 0) > at.attempt
      }
      const terminal = list.data.filter((c) => settled(c) && !laterUnsettled(c))
      const candidates = terminal.filter((c) => !c.end_timestamp || c.end_timestamp >= oldestKept)
      result.tooOld += terminal.length - candidates.length
      if (candidates.length > 0) {
        const ids = candidates.map((c) => c.conversation_id)
        const known = await rt.store.db.selectFrom('conversations').select(['conversation_id', 'terminal']).where('conversation_id', 'in', ids).execute()
        const delivered = await rt.store.db
          .selectFrom('webhook_events')
          .select('conversation_id')
          .where((eb) => keyedLookup(eb, [eb('conversation_id', 'in', ids)]))
          .execute()
        const done = new Set([...known.filter((k) => k.terminal === 1).map((k) => k.conversation_id), ...delivered.map((d) => d.conversation_id)])
        for (const item of candidates) {
          if (done.has(item.conversation_id)) continue
          if (signal?.aborted || !(await stillOurs())) break pages
          let detail: ConversationDetail
          try {
            detail = await client.getConversation(item.conversation_id)
          } catch (error) {
            // This conversation's own answer (gone: 404; refused: another 4xx; a body that does not parse): skipped,
            // named, and the run goes on. The provider down, slow or limiting ends the run, as before: what it queued
            // stays, and the next run starts past it.
            if (!isVoiceApiError(error) || !(error.type === 'invalid_response' || (error.status >= 400 && error.status < 500 && error.status !== 429 && error.status !== 401 && error.status !== 403))) throw error
            const message = `${error.status ? `${error.status} ` : ''}${error.type}: ${error.message}`
            result.unreadable.push({ conversationId: item.conversation_id, error: message })
            rt.log.warn({ conversation_id: item.conversation_id, err: message }, 'reconciliation skipped a conversation the provider listed but would not give')
            continue
          }
          result.fetched++
          if (!isTerminalStatus(detail.status)) continue
          const event = synthesizeEvent(item, detail, now, await placedWith(rt, item, detail))
          const { duplicate } = await inbox.commit(
            pendingRow(
              {
                event_id: event.event_id,
                target: 'reconcile',
                event_type: event.event_type,
                conversation_id: detail.conversation_id,
                trace_id: detail.trace_id,
                agent_id: detail.agent_id,
                body: JSON.stringify(event),
                headers: '{}',
                source: 'reconcile',
              },
              now,
            ),
          )
          if (!duplicate) {
            result.synthesized++
            result.eventIds.push(event.event_id)
            metrics.reconciled.inc()
            rt.log.info({ event_id: event.event_id, conversation_id: detail.conversation_id, trace_id: detail.trace_id }, 'reconciliation queued a missed conversation')
          }
        }
      }
      if (!list.has_more || list.data.length === 0) break
      if (page === maxPages - 1) {
        result.more = true
        rt.log.warn({ pages: result.pages, listed: result.listed }, `reconciliation read its ${maxPages} pages (the newest ${maxPages * PAGE} conversations); older ones were not looked at`)
      }
    }
  } catch (error) {
    // Stopped mid-request: what was queued stays queued; the rest is the next run's.
    if (!signal?.aborted) throw error
  } finally {
    await releaseLease(rt, LEASE)
  }
  if (signal?.aborted) result.stopped = true
  if (result.synthesized > 0) worker?.wake()
  return result
}
