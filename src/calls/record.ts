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

/** A `calls` row with its JSON columns parsed; without `customer_key`, the ledger's own index of the number (src/campaigns/contact-key.ts). */
export interface CallRecord extends Omit<CallRow, 'parameters' | 'retry_context' | 'metadata' | 'status' | 'customer_key'> {
  parameters: CallParameter[]
  retry_context: RetryContext | null
  metadata: string | Record<string, string> | null
  status: CallStatus
}

export function toCallRecord(row: CallRow): CallRecord {
  const { customer_key: _key, ...fields } = row
  return {
    ...fields,
    parameters: fromJson<CallParameter[]>(row.parameters) ?? [],
    retry_context: fromJson<RetryContext>(row.retry_context),
    metadata: fromJson<string | Record<string, string>>(row.metadata),
    status: row.status as CallStatus,
  }
}
