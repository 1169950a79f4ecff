import type { Runtime } from '../runtime.ts'
import { toCallRecord, type CallRecord, type CallStatus } from './record.ts'

/** Read side of the calls ledger: what switchboard placed or scheduled, newest first. */
export const CALL_STATUSES: CallStatus[] = ['pending', 'initiated', 'scheduled', 'failed', 'rejected']

export interface ListCallsQuery {
  status?: CallStatus
  recipe?: string
  campaign?: string
  agentId?: number
  /** Default 50, at most 1000. */
  limit?: number
}

export const LIST_CALLS_MAX = 1000

export async function listCalls(rt: Runtime, query: ListCallsQuery = {}): Promise<CallRecord[]> {
  const limit = Math.min(Math.max(query.limit ?? 50, 1), LIST_CALLS_MAX)
  let q = rt.store.db.selectFrom('calls').selectAll()
  if (query.status) q = q.where('status', '=', query.status)
  if (query.recipe) q = q.where('recipe', '=', query.recipe)
  if (query.campaign) q = q.where('campaign', '=', query.campaign)
  if (query.agentId !== undefined) q = q.where('agent_id', '=', query.agentId)
  const rows = await q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute()
  return rows.map(toCallRecord)
}
