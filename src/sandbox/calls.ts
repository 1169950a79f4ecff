import type { RetryContext, WebhookRetry } from '../upstream/schemas.ts'
import type { Clock } from '../utils/clock.ts'
import type { Random } from '../utils/random.ts'
import type { DemoAgent, DemoTenant } from './demo.ts'
import type { Ids } from './ids.ts'
import { FAILURE_REASONS, PLATFORM_RETRY_STATUSES, contentFor, outcomeFor, timelineFor } from './outcomes.ts'
import type { BatchRecord, ConversationRecord, SandboxState } from './state.ts'
import type { Timers } from './timers.ts'
import type { WebhookDispatcher } from './webhooks.ts'

/** What to dial: an API call, a batch row, a scheduled call or a platform retry. */
export interface CallOrder {
  tenant: DemoTenant
  agent: DemoAgent
  traceId: string
  toPhone: string
  parameters: Record<string, string>
  retryContext?: RetryContext | undefined
  metadata?: string | Record<string, string> | undefined
  /** Continue this conversation chain (the request's conversation_id); a new chain otherwise. */
  chain?: string | undefined
  /** A follow-up call (retry_context or conversation_id given): numbers ending in 5 answer. */
  followUp: boolean
  platformAttempt: number
  batch?: { record: BatchRecord; row: number } | undefined
}

/** Delay between platform retry attempts, in simulated seconds. */
export const PLATFORM_RETRY_DELAY_SECONDS = 120

export interface CallEngineOptions {
  clock: Clock
  random: Random
  speed: number
  maxCalls: number
  state: SandboxState
  ids: Ids
  timers: Timers
  webhooks: WebhookDispatcher
  /** A batch row changed state (the batch module decides whether the batch is done). */
  onBatchRow(batch: BatchRecord, row: number): void
}

interface Active {
  record: ConversationRecord
  /** Real (clock) time the call will end: the concurrency 429's Retry-After. */
  endsAt: number
}

/**
 * Call lifecycle: initiated → ringing → in_progress → outcome, on timers scaled by speed; the
 * workspace's concurrency limit with a FIFO queue for batch rows, scheduled calls and platform retries.
 */
export function createCallEngine(options: CallEngineOptions) {
  const { clock, random, state, ids, timers, webhooks } = options
  const active = new Map<string, Map<string, Active>>()
  const queues = new Map<string, { items: CallOrder[]; head: number }>()
  let started = 0
  const simulated = (seconds: number) => Math.round((seconds * 1000) / options.speed)

  const activeOf = (tenantId: string) => {
    let m = active.get(tenantId)
    if (!m) active.set(tenantId, (m = new Map()))
    return m
  }
  const queueOf = (tenantId: string) => {
    let q = queues.get(tenantId)
    if (!q) queues.set(tenantId, (q = { items: [], head: 0 }))
    return q
  }
  const setRow = (order: CallOrder, status: BatchRecord['rows'][number]['status'], durationSeconds = 0) => {
    if (!order.batch) return
    const row = order.batch.record.rows[order.batch.row]!
    row.status = status
    row.durationSeconds = durationSeconds
    options.onBatchRow(order.batch.record, order.batch.row)
  }

  function start(order: CallOrder): ConversationRecord {
    const chain = order.chain ?? ids.chainId()
    const attempt = state.nextAttempt(chain)
    const now = Math.floor(clock.now())
    const status = outcomeFor(order.toPhone, order.followUp || order.platformAttempt > 1)
    const timeline = timelineFor(status, random)
    const record: ConversationRecord = {
      id: ids.conversationId(chain, attempt),
      chain,
      attempt,
      tenantId: order.tenant.id,
      agentId: order.agent.id,
      contactNumber: order.toPhone,
      fromPhone: order.agent.fromPhone,
      status: 'initiated',
      startedAt: now,
      endedAt: null,
      durationSeconds: 0,
      failureReason: null,
      results: {},
      transcript: undefined,
      traceId: order.traceId,
      parameters: order.parameters,
      retryContext: order.retryContext,
      metadata: order.metadata,
      hasRecording: false,
      platformAttempt: order.platformAttempt,
      batchId: order.batch?.record.id,
    }
    state.addConversation(record)
    started++
    activeOf(order.tenant.id).set(record.id, { record, endsAt: now + simulated(timeline.endsAt) })
    setRow(order, 'active')
    if (timeline.ringingAt !== undefined) timers.after(simulated(timeline.ringingAt), () => void (record.status = 'ringing'))
    if (timeline.answeredAt !== undefined) timers.after(simulated(timeline.answeredAt), () => void (record.status = 'in_progress'))
    timers.after(simulated(timeline.endsAt), () => {
      record.status = status
      record.endedAt = Math.floor(clock.now())
      record.durationSeconds = timeline.durationSeconds
      record.failureReason = FAILURE_REASONS[status]
      const content = contentFor({
        status,
        phone: order.toPhone,
        parameters: order.parameters,
        retryContext: order.retryContext,
        durationSeconds: timeline.durationSeconds,
      })
      record.results = content.results
      record.transcript = content.transcript
      record.hasRecording = status === 'completed'
      activeOf(order.tenant.id).delete(record.id)

      const policy = order.agent.platformRetries
      const maxAttempts = policy.enabled ? policy.maxAttempts : 1
      const willRetry = policy.enabled && PLATFORM_RETRY_STATUSES.includes(status) && order.platformAttempt < maxAttempts
      const retryAt = willRetry ? clock.now() + simulated(PLATFORM_RETRY_DELAY_SECONDS) : undefined
      const retry: WebhookRetry = {
        attempt_number: order.platformAttempt,
        is_final_attempt: !willRetry,
        max_attempts: maxAttempts,
        next_retry_at: retryAt === undefined ? null : new Date(retryAt).toISOString(),
      }
      setRow(order, willRetry ? 'pending_retry' : status, timeline.durationSeconds)
      webhooks.emit(record, retry)
      if (retryAt !== undefined) {
        timers.at(retryAt, () => startOrQueue({ ...order, chain, platformAttempt: order.platformAttempt + 1 }))
      }
      pump(order.tenant.id)
    })
    return record
  }

  function pump(tenantId: string) {
    const q = queueOf(tenantId)
    const running = activeOf(tenantId)
    while (q.head < q.items.length && running.size < options.maxCalls) {
      const next = q.items[q.head]!
      q.items[q.head++] = undefined as unknown as CallOrder
      start(next)
    }
    if (q.head === q.items.length) {
      q.items = []
      q.head = 0
    }
  }

  function startOrQueue(order: CallOrder) {
    queueOf(order.tenant.id).items.push(order)
    setRow(order, 'queued')
    pump(order.tenant.id)
  }

  return {
    start,
    /** Starts the call when a slot is free, otherwise queues it (batch rows, scheduled calls, retries). */
    startOrQueue,
    activeCount: (tenantId: string) => activeOf(tenantId).size,
    /** Whole seconds until the first active call of the workspace ends (at least 1). */
    secondsUntilSlot(tenantId: string): number {
      let first = Infinity
      for (const a of activeOf(tenantId).values()) first = Math.min(first, a.endsAt)
      return Number.isFinite(first) ? Math.max(1, Math.ceil((first - clock.now()) / 1000)) : 1
    },
    queued: (tenantId: string) => {
      const q = queueOf(tenantId)
      return q.items.length - q.head
    },
    started: () => started,
  }
}
export type CallEngine = ReturnType<typeof createCallEngine>
