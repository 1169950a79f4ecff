import type { Runtime } from '../runtime.ts'
import type { BatchCall, BatchMetrics } from '../upstream/schemas.ts'
import type { DayRange } from './day-range.ts'
import { providerTimeMs } from '../utils/iso-datetime.ts'

export interface ReportBatch {
  id: number
  name: string
  agentId: number
  status: string
  totalRecipients: number
  createdAt: string
  metrics: BatchMetrics | null
  /** Why metrics are missing, when the provider would not give them. */
  metricsError: string | null
}

export type BatchSection =
  | {
      available: true
      batches: ReportBatch[]
      /** More of the day's batches were found than are shown (MAX_METRICS). */
      truncated: boolean
      /** The search stopped at the provider's newest SEARCHED_BATCHES: older ones may belong to the day too. */
      searchCut: boolean
    }
  | { available: false; error: string; batches: ReportBatch[] }

const PAGE = 100
const MAX_PAGES = 10
/** How many of the provider's batches, newest first, a report searches. */
export const SEARCHED_BATCHES = PAGE * MAX_PAGES
const MAX_METRICS = 25

function inDay(iso: string | null | undefined, range: Pick<DayRange, 'startMs' | 'endMs'>): boolean {
  if (!iso) return false
  const t = providerTimeMs(iso)
  return Number.isFinite(t) && t >= range.startMs && t < range.endMs
}

/**
 * The provider's batches created or scheduled that day, with their metrics. One attempt per request and a
 * short timeout: the report must go out even when the provider is down, and then says so.
 */
export async function loadBatchSection(rt: Runtime, range: Pick<DayRange, 'startMs' | 'endMs'>): Promise<BatchSection> {
  const client = rt.workspaceClient({ retry: { retries: 0 }, timeoutMs: Math.min(rt.config.upstreamTimeoutMs, 10_000) })
  const found: BatchCall[] = []
  let searchCut = false
  try {
    for (let page = 0; ; page++) {
      if (page >= MAX_PAGES) {
        searchCut = true
        break
      }
      const list = await client.listBatches({ limit: PAGE, offset: page * PAGE })
      for (const b of list.data) if (inDay(b.created_at, range) || inDay(b.scheduled_for, range)) found.push(b)
      if (!list.has_more || list.data.length === 0) break
    }
  } catch (error) {
    return { available: false, error: `provider unreachable: ${(error as Error).message}`, batches: [] }
  }
  const truncated = found.length > MAX_METRICS
  const batches: ReportBatch[] = []
  for (const b of found.slice(0, MAX_METRICS)) {
    let metrics: BatchMetrics | null = null
    let metricsError: string | null = null
    try {
      metrics = await client.getBatchMetrics(b.id)
    } catch (error) {
      metricsError = (error as Error).message
    }
    batches.push({
      id: b.id,
      name: b.name,
      agentId: b.agent_id,
      status: b.status,
      totalRecipients: b.total_recipients,
      createdAt: b.created_at,
      metrics,
      metricsError,
    })
  }
  return { available: true, batches, truncated, searchCut }
}
