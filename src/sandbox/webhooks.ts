import type { SandboxFaults } from '../config/schema.ts'
import {
  formatWebhookTranscript,
  type WebhookEvent,
  type WebhookEventBody,
  type WebhookEventType,
  type WebhookRetry,
} from '../upstream/schemas.ts'
import type { Clock } from '../utils/clock.ts'
import type { Logger } from '../utils/logger.ts'
import type { Random } from '../utils/random.ts'
import type { Ids } from './ids.ts'
import { signWebhookBody } from './signing.ts'
import type { ConversationRecord } from './state.ts'
import type { Timers } from './timers.ts'

/** A webhook target as configured on an agent (provider-notes → Targets). */
export interface SandboxWebhookTarget {
  name: string
  url: string
  /** Optional per target; without it no signature header is sent. */
  secret?: string | undefined
  events: readonly WebhookEventType[]
  includeTranscript: boolean
  includeRecordingUrl: boolean
  active: boolean
}

/** One delivery attempt as it happened (or was dropped by fault injection). */
export interface DeliveryRecord {
  eventId: string
  eventType: WebhookEvent['event_type']
  conversationId: string
  target: string
  url: string
  /** 1-based; a duplicate copy carries the attempt it duplicated. */
  attempt: number
  /** HTTP status, or why there was none. */
  outcome: number | 'network_error' | 'timeout' | 'dropped'
  duplicate: boolean
  at: number
}

/** Attempts at 0 s, +30 s and +300 s after the first (provider-notes), divided by SANDBOX_SPEED. */
export const DELIVERY_SCHEDULE_SECONDS = [0, 30, 300] as const
export const DELIVERY_TIMEOUT_MS = 10_000
/** How late a reordered delivery is sent, in simulated seconds: long enough for the next events to pass it. */
export const REORDER_DELAY_SECONDS = 45
const MAX_RECORDS = 50_000

export interface WebhookDispatcherOptions {
  clock: Clock
  random: Random
  speed: number
  faults: SandboxFaults
  timers: Timers
  ids: Ids
  log: Logger
  targets(agentId: number, tenantId: string): SandboxWebhookTarget[]
  recordingUrl(conversationId: string): string
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

/** Builds the provider's event envelope for one target's settings. */
export function buildWebhookEvent(input: {
  eventId: string
  createdAt: number
  conversation: ConversationRecord
  retry: WebhookRetry
  target: Pick<SandboxWebhookTarget, 'includeTranscript' | 'includeRecordingUrl'>
  recordingUrl: string
}): WebhookEventBody {
  const c = input.conversation
  const eventType = `call.${c.status}` as WebhookEventType
  const call: WebhookEventBody['data']['call'] = {
    agent_id: c.agentId,
    call_parameters: { ...c.parameters },
    conversation_id: c.id,
    duration_seconds: c.status === 'no_answer' ? null : c.durationSeconds,
    started_at: iso(c.startedAt),
    ended_at: iso(c.endedAt),
    failure_reason: c.failureReason,
    from_phone: c.fromPhone,
    to_phone: c.contactNumber,
    recording_url: input.target.includeRecordingUrl && c.hasRecording ? input.recordingUrl : null,
    status: c.status,
    trace_id: c.traceId,
  }
  if (c.metadata !== undefined) call.metadata = c.metadata
  return {
    event_id: input.eventId,
    event_type: eventType,
    timestamp: new Date(input.createdAt).toISOString(),
    data: {
      call,
      results: c.results,
      retry: input.retry,
      retry_context: c.retryContext ?? null,
      transcript: input.target.includeTranscript && c.status === 'completed' && c.transcript ? formatWebhookTranscript(c.transcript) : null,
    },
  }
}

/**
 * Sends terminal call events to an agent's targets the way the provider does: only subscribed types,
 * signed raw body, the same event_id across retries, attempts on the retry schedule with a 10 s timeout,
 * retried on network errors, timeouts, 429 and 5xx only. Fault injection may drop, duplicate or delay.
 */
export function createWebhookDispatcher(options: WebhookDispatcherOptions) {
  const { clock, random, timers, log } = options
  const records: DeliveryRecord[] = []
  const inflight = new Set<AbortController>()
  let closed = false
  const simulated = (seconds: number) => Math.round((seconds * 1000) / options.speed)
  const chance = (p: number) => p > 0 && random.next() < p

  const record = (r: DeliveryRecord) => {
    records.push(r)
    if (records.length > MAX_RECORDS) records.splice(0, records.length - MAX_RECORDS)
  }

  async function send(delivery: {
    event: WebhookEventBody
    body: string
    target: SandboxWebhookTarget
    attempt: number
    duplicate: boolean
  }): Promise<DeliveryRecord['outcome']> {
    const { event, body, target } = delivery
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-formantai-event-id': event.event_id,
      'x-formantai-event-type': event.event_type,
      'x-formantai-timestamp': String(Math.floor(clock.now() / 1000)),
      'user-agent': 'FormantAI-Webhooks/sandbox',
    }
    if (target.secret) headers['x-formantai-signature'] = signWebhookBody(target.secret, body)
    const controller = new AbortController()
    inflight.add(controller)
    let timedOut = false
    const cancelTimeout = timers.after(DELIVERY_TIMEOUT_MS, () => {
      timedOut = true
      controller.abort()
    })
    let outcome: DeliveryRecord['outcome']
    try {
      const res = await fetch(target.url, { method: 'POST', body, headers, signal: controller.signal, redirect: 'manual' })
      // The answer must arrive in full within the timeout too.
      await res.arrayBuffer()
      outcome = res.status
    } catch {
      outcome = timedOut ? 'timeout' : 'network_error'
    } finally {
      cancelTimeout()
      inflight.delete(controller)
    }
    if (!closed) {
      record({
        eventId: event.event_id,
        eventType: event.event_type,
        conversationId: event.data.call.conversation_id,
        target: target.name,
        url: target.url,
        attempt: delivery.attempt,
        outcome,
        duplicate: delivery.duplicate,
        at: clock.now(),
      })
    }
    return outcome
  }

  function deliver(event: WebhookEventBody, target: SandboxWebhookTarget, duplicate: boolean, firstAt: number) {
    const body = JSON.stringify(event)
    const attemptAt = async (attempt: number) => {
      if (closed) return
      const outcome = await send({ event, body, target, attempt, duplicate: false })
      if (closed) return
      const ok = typeof outcome === 'number' && outcome >= 200 && outcome < 300
      if (ok) {
        if (duplicate) void send({ event, body, target, attempt, duplicate: true })
        return
      }
      const retryable = typeof outcome !== 'number' || outcome === 429 || outcome >= 500
      if (!retryable || attempt >= DELIVERY_SCHEDULE_SECONDS.length) {
        log.warn({ event_id: event.event_id, target: target.name, outcome, attempt }, 'sandbox webhook delivery given up')
        return
      }
      timers.at(firstAt + simulated(DELIVERY_SCHEDULE_SECONDS[attempt]!), () => void attemptAt(attempt + 1))
    }
    timers.at(firstAt, () => void attemptAt(1))
  }

  return {
    /** Emits the terminal event of a conversation to every active target of its agent that subscribes. */
    emit(conversation: ConversationRecord, retry: WebhookRetry) {
      if (closed) return
      const eventId = options.ids.eventId()
      const createdAt = clock.now()
      const eventType = `call.${conversation.status}` as WebhookEventType
      for (const target of options.targets(conversation.agentId, conversation.tenantId)) {
        if (!target.active || !target.events.includes(eventType)) continue
        const event = buildWebhookEvent({
          eventId,
          createdAt,
          conversation,
          retry,
          target,
          recordingUrl: options.recordingUrl(conversation.id),
        })
        if (chance(options.faults.webhookDrop)) {
          record({
            eventId,
            eventType,
            conversationId: conversation.id,
            target: target.name,
            url: target.url,
            attempt: 0,
            outcome: 'dropped',
            duplicate: false,
            at: createdAt,
          })
          continue
        }
        const duplicate = chance(options.faults.webhookDuplicate)
        const late = chance(options.faults.webhookReorder)
        deliver(event, target, duplicate, createdAt + (late ? simulated(REORDER_DELAY_SECONDS) : 0))
      }
    },
    deliveries: (): readonly DeliveryRecord[] => records,
    close() {
      closed = true
      for (const c of inflight) c.abort()
      inflight.clear()
    },
  }
}
export type WebhookDispatcher = ReturnType<typeof createWebhookDispatcher>
