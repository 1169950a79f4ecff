import { isTerminalStatus } from '../upstream/schemas.ts'
import type { ProxyRoute } from './routes-table.ts'

/** How long each kind of answer is served from cache (README → Proxy cache policy). */
export const CACHE_TTL_MS = {
  terminalConversation: 24 * 60 * 60 * 1000,
  /**
   * A completed conversation without its `recording_url` yet: the provider adds it when the recording is ready
   * ("may not be available immediately"), and no webhook says so — a day-long entry would hide it for a day.
   */
  completedAwaitingRecording: 60_000,
  liveConversation: 5_000,
  list: 10_000,
  batch: 10_000,
  metrics: 10_000,
  notFound: 5_000,
  /** A completed transcription never changes; LRU eviction still bounds it. */
  completedTranscription: 100 * 365 * 24 * 60 * 60 * 1000,
} as const

/** Expired entries are kept this long to answer with X-Cache: STALE while the provider is down. */
export const STALE_MAX_MS = 24 * 60 * 60 * 1000

export interface CachePlan {
  kind: 'conversation' | 'conversation_list' | 'batch' | 'batch_list' | 'batch_metrics' | 'transcription' | 'not_found'
  ttlMs: number
  resourceId: string | null
  agentId: number | null
}

function objectField(body: unknown, field: string): unknown {
  return typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[field] : undefined
}

function agentOf(value: unknown): number | null {
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value
  return typeof n === 'number' && Number.isSafeInteger(n) ? n : null
}

/**
 * Whether and how long an upstream answer to a GET is cached. Only 200s and 404s are: errors such as
 * 400 (a bad limit) are cheap to ask again and 401/429/5xx must never be replayed.
 */
export function planCache(route: ProxyRoute, status: number, body: unknown, query: URLSearchParams): CachePlan | undefined {
  const resourceId = 'id' in route ? route.id : null
  if (status === 404) {
    if (resourceId === null) return undefined
    return { kind: 'not_found', ttlMs: CACHE_TTL_MS.notFound, resourceId, agentId: null }
  }
  if (status !== 200) return undefined
  const data = objectField(body, 'data')
  switch (route.name) {
    case 'conversation': {
      const status = objectField(data, 'status')
      const terminal = typeof status === 'string' && isTerminalStatus(status)
      const awaitingRecording = status === 'completed' && !objectField(data, 'recording_url')
      return {
        kind: 'conversation',
        ttlMs: !terminal ? CACHE_TTL_MS.liveConversation : awaitingRecording ? CACHE_TTL_MS.completedAwaitingRecording : CACHE_TTL_MS.terminalConversation,
        resourceId,
        agentId: agentOf(objectField(data, 'agent_id')),
      }
    }
    case 'conversation_list':
      return { kind: 'conversation_list', ttlMs: CACHE_TTL_MS.list, resourceId: null, agentId: agentOf(query.get('agent_id')) }
    case 'batch_list':
      return { kind: 'batch_list', ttlMs: CACHE_TTL_MS.list, resourceId: null, agentId: agentOf(query.get('agent_id')) }
    case 'batch':
      return { kind: 'batch', ttlMs: CACHE_TTL_MS.batch, resourceId, agentId: agentOf(objectField(data, 'agent_id')) }
    case 'batch_metrics':
      // Metrics do not name their agent; null means "any webhook invalidates it".
      return { kind: 'batch_metrics', ttlMs: CACHE_TTL_MS.metrics, resourceId, agentId: null }
    case 'transcription':
      return objectField(body, 'status') === 'completed'
        ? { kind: 'transcription', ttlMs: CACHE_TTL_MS.completedTranscription, resourceId, agentId: null }
        : undefined
    default:
      return undefined
  }
}
