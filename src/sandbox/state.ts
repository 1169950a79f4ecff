import type { RetryContext, TerminalStatus, TranscriptTurn } from '../upstream/schemas.ts'
import type { DemoAgent, DemoTenant } from './demo.ts'

export type LiveStatus = 'initiated' | 'ringing' | 'in_progress'

export interface ConversationRecord {
  id: string
  chain: string
  attempt: number
  tenantId: string
  agentId: number
  contactNumber: string
  fromPhone: string | null
  status: LiveStatus | TerminalStatus
  /** Epoch ms (sandbox clock) when the call was initiated / reached its outcome. */
  startedAt: number
  endedAt: number | null
  durationSeconds: number
  failureReason: string | null
  results: Record<string, unknown>
  transcript: TranscriptTurn[] | undefined
  traceId: string
  parameters: Record<string, string>
  retryContext: RetryContext | undefined
  metadata: string | Record<string, string> | undefined
  hasRecording: boolean
  /** Platform attempt number within one API request (agent retries), 1-based. */
  platformAttempt: number
  batchId: number | undefined
}

export type RowStatus = 'queued' | 'active' | 'pending_retry' | TerminalStatus

export interface BatchRecord {
  id: number
  tenantId: string
  name: string
  agentId: number
  status: 'pending' | 'in_progress' | 'completed'
  createdAt: number
  updatedAt: number | null
  /** Rows with a final outcome (each row finishes once). */
  finishedRows: number
  rows: Array<{ parameters: Record<string, string>; status: RowStatus; durationSeconds: number }>
}

export interface TranscriptionJobRecord {
  id: string
  tenantId: string
  engine: string
  status: 'pending' | 'completed'
  createdAt: number
  text?: string
  language?: string
  utterances?: Array<{ speaker: string; text: string; start: number; end: number }>
}

interface TenantState {
  /** Creation order (oldest first); a list page reads it from the end, so a page is O(limit). */
  conversations: ConversationRecord[]
  byAgent: Map<number, ConversationRecord[]>
  batches: BatchRecord[]
  batchesByAgent: Map<number, BatchRecord[]>
}

/** Everything the sandbox knows, in memory, indexed per tenant. */
export function createState(tenants: DemoTenant[]) {
  const byKey = new Map(tenants.map((t) => [t.apiKey, t]))
  const perTenant = new Map<string, TenantState>()
  const conversations = new Map<string, ConversationRecord>()
  const batches = new Map<number, BatchRecord>()
  const jobs = new Map<string, TranscriptionJobRecord>()
  /** Highest attempt number per conversation chain. */
  const chains = new Map<string, number>()
  /**
   * `tenant:agent:key` → expiry (epoch ms). Kept in expiry order (every key gets the same window, and a key is
   * re-inserted rather than updated in place), so the expired ones are always at the front.
   */
  const idempotency = new Map<string, number>()

  const tenantState = (tenantId: string): TenantState => {
    let s = perTenant.get(tenantId)
    if (!s) {
      s = { conversations: [], byAgent: new Map(), batches: [], batchesByAgent: new Map() }
      perTenant.set(tenantId, s)
    }
    return s
  }

  const push = <K, V>(map: Map<K, V[]>, key: K, value: V) => {
    const list = map.get(key)
    if (list) list.push(value)
    else map.set(key, [value])
  }

  /** Newest first, O(limit). */
  const page = <T>(list: readonly T[], limit: number, offset: number) => {
    const total = list.length
    const items: T[] = []
    for (let i = total - 1 - offset; i >= 0 && items.length < limit; i--) items.push(list[i]!)
    return { items, total, hasMore: offset + items.length < total }
  }

  return {
    tenantByKey: (key: string): DemoTenant | undefined => byKey.get(key),
    agentOf: (tenant: DemoTenant, agentId: number): DemoAgent | undefined => tenant.agents.find((a) => a.id === agentId),

    addConversation(record: ConversationRecord) {
      const s = tenantState(record.tenantId)
      s.conversations.push(record)
      push(s.byAgent, record.agentId, record)
      conversations.set(record.id, record)
      chains.set(record.chain, Math.max(chains.get(record.chain) ?? 0, record.attempt))
    },
    conversation(tenantId: string, id: string): ConversationRecord | undefined {
      const c = conversations.get(id)
      return c && c.tenantId === tenantId ? c : undefined
    },
    listConversations(tenantId: string, q: { agentId?: number | undefined; limit: number; offset: number }) {
      const s = tenantState(tenantId)
      const list = q.agentId === undefined ? s.conversations : (s.byAgent.get(q.agentId) ?? [])
      return page(list, q.limit, q.offset)
    },
    nextAttempt: (chain: string) => (chains.get(chain) ?? 0) + 1,

    addBatch(batch: BatchRecord) {
      const s = tenantState(batch.tenantId)
      s.batches.push(batch)
      push(s.batchesByAgent, batch.agentId, batch)
      batches.set(batch.id, batch)
    },
    batch(tenantId: string, id: number): BatchRecord | undefined {
      const b = batches.get(id)
      return b && b.tenantId === tenantId ? b : undefined
    },
    listBatches(tenantId: string, q: { agentId?: number | undefined; limit: number; offset: number }) {
      const s = tenantState(tenantId)
      const list = q.agentId === undefined ? s.batches : (s.batchesByAgent.get(q.agentId) ?? [])
      return page(list, q.limit, q.offset)
    },

    addJob: (job: TranscriptionJobRecord) => void jobs.set(job.id, job),
    job(tenantId: string, id: string): TranscriptionJobRecord | undefined {
      const j = jobs.get(id)
      return j && j.tenantId === tenantId ? j : undefined
    },

    /** True when the key was already used by this tenant + agent within its window. */
    idempotencyUsed(tenantId: string, agentId: number, key: string, now: number): boolean {
      const expiry = idempotency.get(`${tenantId}:${agentId}:${key}`)
      return expiry !== undefined && expiry > now
    },
    rememberIdempotency(tenantId: string, agentId: number, key: string, now: number, windowMs: number) {
      // Expired keys are dropped from the front as new ones arrive: a long-running sandbox keeps only the last
      // window's keys, and no write ever scans them all (a full sweep every 1,000 calls read a day of keys on the
      // event loop the receiver shares).
      for (const [k, expiry] of idempotency) {
        if (expiry > now) break
        idempotency.delete(k)
      }
      const id = `${tenantId}:${agentId}:${key}`
      idempotency.delete(id)
      idempotency.set(id, now + windowMs)
    },

    counts: () => ({ conversations: conversations.size, batches: batches.size, jobs: jobs.size, idempotencyKeys: idempotency.size }),
  }
}
export type SandboxState = ReturnType<typeof createState>
