import type { Selectable } from 'kysely'
import type { CallsTable } from '../db/schema.ts'
import { fromJson } from '../db/json.ts'
import type { CallParameter, RetryContext } from '../upstream/schemas.ts'

export type CallRow = Selectable<CallsTable>

/**
 * Local call status: queued (waiting in the paced queue), pending (sent, no answer yet), initiated | scheduled
 * (accepted), failed (ambiguous), rejected (refused).
 */
export type CallStatus = 'queued' | 'pending' | 'initiated' | 'scheduled' | 'failed' | 'rejected'

/** A `calls` row with its JSON columns parsed. */
export interface CallRecord extends Omit<CallRow, 'parameters' | 'retry_context' | 'metadata' | 'status'> {
  parameters: CallParameter[]
  retry_context: RetryContext | null
  metadata: string | Record<string, string> | null
  status: CallStatus
}

export function toCallRecord(row: CallRow): CallRecord {
  return {
    ...row,
    parameters: fromJson<CallParameter[]>(row.parameters) ?? [],
    retry_context: fromJson<RetryContext>(row.retry_context),
    metadata: fromJson<string | Record<string, string>>(row.metadata),
    status: row.status as CallStatus,
  }
}
