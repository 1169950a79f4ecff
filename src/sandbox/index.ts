import { H3 } from 'h3'
import type { SandboxFaults } from '../config/schema.ts'
import { systemClock, type Clock } from '../utils/clock.ts'
import { isMalformedPath, malformedPathAnswer } from '../upstream/malformed-path.ts'
import { createSilentLogger, type Logger } from '../utils/logger.ts'
import { systemRandom, type Random } from '../utils/random.ts'
import { createBatchRunner } from './batches.ts'
import { createCallEngine } from './calls.ts'
import type { SandboxContext } from './context.ts'
import { DEMO_TENANTS, type DemoTenant } from './demo.ts'
import { createFaultInjector, NO_FAULTS } from './faults.ts'
import { recordingPath } from './handlers/conversations.ts'
import { createIds } from './ids.ts'
import { FAILURE_REASONS, contentFor, outcomeFor } from './outcomes.ts'
import { createNumberRateLimiter } from './rate-limit.ts'
import { createRouter } from './router.ts'
import { createState, type ConversationRecord } from './state.ts'
import { createTimers } from './timers.ts'
import { createTranscriber } from './transcription.ts'
import { createWebhookDispatcher, type DeliveryRecord, type SandboxWebhookTarget } from './webhooks.ts'

export type { SandboxWebhookTarget, DeliveryRecord }
export { DEMO_TENANTS, SANDBOX_WORKSPACE_KEY } from './demo.ts'

export interface SandboxOptions {
  clock?: Clock
  random?: Random
  /** Divides simulated durations (ringing, call length, webhook retry delays, transcription time). */
  speed?: number
  faults?: SandboxFaults
  /** Requests per minute per API key. */
  rateLimit?: number
  /** Calls per destination number per 10 minutes. */
  numberLimit?: number
  /** Concurrent active calls per workspace. */
  maxCalls?: number
  log?: Logger
  /** The sandbox's public base (e.g. http://127.0.0.1:3000/sandbox) for recording URLs; by default the base of the last request. */
  publicBaseUrl?: () => string
  /** The webhook targets configured on an agent (of a tenant); read at each event, so they may change at run time. */
  webhookTargets?: (agentId: number, tenantId: string) => SandboxWebhookTarget[]
  tenants?: DemoTenant[]
}

export interface SandboxStats {
  /** POST /v1/call requests accepted (immediate and scheduled). */
  callsAccepted: number
  callsScheduled: number
  /** Calls actually dialled: API calls, batch rows, platform retries, scheduled calls that started. */
  callsStarted: number
  activeCalls: Record<string, number>
  queuedCalls: Record<string, number>
  conversations: number
  batches: number
  transcriptionJobs: number
  /** Idempotency keys remembered (those of the last 24 h). */
  idempotencyKeys: number
  requests: number
  requestsByStatus: Record<number, number>
  timersPending: number
}

export interface Sandbox {
  /** The provider API under `/v1/...`; also works mounted (`app.mount('/sandbox', sandbox.app)`). */
  app: H3
  /** Same as `app.fetch`. */
  fetch(request: Request): Promise<Response>
  /** Cancels every timer and aborts webhook deliveries in flight. */
  close(): Promise<void>
  stats(): SandboxStats
  /** Webhook delivery attempts so far, oldest first. */
  deliveries(): readonly DeliveryRecord[]
  /** Fault injection at run time: the next `count` authenticated API requests answer 500 before any side effect. */
  failNextRequests(count: number): void
  setFaults(patch: Partial<SandboxFaults>): void
  /**
   * Stores `count` finished conversations for a tenant's agent directly (large-list tests, demos), spread
   * one minute apart before now, with outcomes by the usual last-digit table.
   */
  seedConversations(input: { apiKey: string; agentId: number; count: number }): void
}

/** Every event type, transcript and recording URL included: what a default target subscribes to. */
export const ALL_EVENTS: SandboxWebhookTarget['events'] = [
  'call.completed', 'call.failed', 'call.busy', 'call.no_answer', 'call.socket_failure', 'call.telephony_failed', 'call.unreachable',
]

/** A faithful, deterministic simulation of the provider API (DESIGN.md → Sandbox provider). */
export function createSandbox(options: SandboxOptions = {}): Sandbox {
  const clock = options.clock ?? systemClock
  const random = options.random ?? systemRandom
  const speed = options.speed ?? 60
  const log = options.log ?? createSilentLogger()
  const maxCalls = options.maxCalls ?? 10
  const tenants = options.tenants ?? DEMO_TENANTS
  const state = createState(tenants)
  const ids = createIds(random)
  const timers = createTimers(clock)
  const faults = createFaultInjector(options.faults ?? NO_FAULTS, random)
  let lastBase = 'http://127.0.0.1'
  const baseUrl = () => options.publicBaseUrl?.() ?? lastBase
  const webhooks = createWebhookDispatcher({
    clock,
    random,
    speed,
    faults: faults.faults,
    timers,
    ids,
    log,
    targets: (agentId, tenantId) => options.webhookTargets?.(agentId, tenantId) ?? [],
    recordingUrl: (id) => `${baseUrl()}${recordingPath(id)}`,
  })
  const batches = createBatchRunner({ clock, speed, state, ids, timers })
  const engine = createCallEngine({ clock, random, speed, maxCalls, state, ids, timers, webhooks, onBatchRow: batches.onRow })
  batches.attach(engine)
  const ctx: SandboxContext = {
    clock,
    log,
    state,
    ids,
    timers,
    engine,
    batches,
    transcriber: createTranscriber({ clock, speed, state, ids, timers }),
    numberLimiter: createNumberRateLimiter(options.numberLimit ?? 3),
    maxCalls,
    counters: { callsAccepted: 0, callsScheduled: 0 },
  }
  const router = createRouter({
    ctx,
    clock,
    log,
    rateLimit: options.rateLimit ?? 600,
    faults,
    publicBaseUrl: options.publicBaseUrl,
    onBase: (b) => void (lastBase = b),
  })

  const app = new H3({
    // Alone (`cli sandbox`), a malformed path gets the provider's error shape rather than h3's.
    onError: (error, event) => (error.status === 400 && isMalformedPath(event.url.pathname) ? malformedPathAnswer(event.url.pathname) : undefined),
  })
  // One catch-all route: unknown paths get the provider's error body, and the mount base is read back
  // from the matched route ('/sandbox/**' when mounted, '/**' alone).
  app.all('/**', (event) => {
    const matched = (event.context.matchedRoute as { route?: string } | undefined)?.route ?? '/**'
    return router.handle(event.req, matched.replace(/\/?\*\*$/, ''))
  })

  let seedCounter = 1
  const perTenant = (f: (tenantId: string) => number) => Object.fromEntries(tenants.map((t) => [t.id, f(t.id)]))

  return {
    app,
    fetch: (request) => Promise.resolve(app.fetch(request)),
    async close() {
      timers.cancelAll()
      webhooks.close()
    },
    stats: () => ({
      callsAccepted: ctx.counters.callsAccepted,
      callsScheduled: ctx.counters.callsScheduled,
      callsStarted: engine.started(),
      activeCalls: perTenant(engine.activeCount),
      queuedCalls: perTenant(engine.queued),
      ...(({ conversations, batches: b, jobs, idempotencyKeys }) => ({ conversations, batches: b, transcriptionJobs: jobs, idempotencyKeys }))(state.counts()),
      requests: router.requests.total,
      requestsByStatus: Object.fromEntries(router.requests.byStatus),
      timersPending: timers.pending(),
    }),
    deliveries: () => webhooks.deliveries(),
    failNextRequests: (count) => faults.failNext(count),
    setFaults: (patch) => faults.set(patch),
    seedConversations({ apiKey, agentId, count }) {
      const tenant = state.tenantByKey(apiKey)
      const agent = tenant && state.agentOf(tenant, agentId)
      if (!tenant || !agent) throw new Error(`no agent ${agentId} for that key`)
      const now = Math.floor(clock.now())
      // Seeded records share content per outcome and derive their trace id from the chain: 100k in well under a second.
      const contents = new Map<string, ReturnType<typeof contentFor>>()
      const seedBase = ids.chainId()
      const traceBase = ids.traceId()
      for (let i = 0; i < count; i++) {
        const phone = `+9198765${String(i % 100_000).padStart(5, '0')}`
        const status = outcomeFor(phone, false)
        const duration = status === 'completed' ? 30 + (i % 90) : 0
        const startedAt = now - (count - i) * 60_000
        const digit = phone.at(-1)!
        let content = contents.get(digit)
        if (!content) {
          content = contentFor({ status, phone, parameters: {}, retryContext: undefined, durationSeconds: duration })
          contents.set(digit, content)
        }
        const chain = `${seedBase.slice(0, 24)}${(seedCounter++).toString(16).padStart(12, '0')}`
        const record: ConversationRecord = {
          id: ids.conversationId(chain, 1),
          chain,
          attempt: 1,
          tenantId: tenant.id,
          agentId,
          contactNumber: phone,
          fromPhone: agent.fromPhone,
          status,
          startedAt,
          endedAt: startedAt + duration * 1000 + 5000,
          durationSeconds: duration,
          failureReason: FAILURE_REASONS[status],
          results: content.results,
          transcript: content.transcript,
          traceId: `${traceBase.slice(0, 24)}${(seedCounter - 1).toString(16).padStart(12, '0')}`,
          parameters: { customer_phone: phone },
          retryContext: undefined,
          metadata: undefined,
          hasRecording: status === 'completed',
          platformAttempt: 1,
          batchId: undefined,
        }
        state.addConversation(record)
      }
    },
  }
}
