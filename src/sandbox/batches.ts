import type { BatchCall, BatchMetrics } from '../upstream/schemas.ts'
import type { Clock } from '../utils/clock.ts'
import type { CallEngine } from './calls.ts'
import type { DemoAgent, DemoTenant } from './demo.ts'
import type { Ids } from './ids.ts'
import type { BatchRecord, SandboxState } from './state.ts'
import type { Timers } from './timers.ts'

/** Simulated seconds a batch stays pending before its rows start dialling. */
export const BATCH_START_DELAY_SECONDS = 2

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

export function serializeBatch(b: BatchRecord): BatchCall {
  return {
    id: b.id,
    name: b.name,
    agent_id: b.agentId,
    status: b.status,
    total_recipients: b.rows.length,
    created_at: new Date(b.createdAt).toISOString(),
    scheduled_for: null,
    updated_at: iso(b.updatedAt),
  }
}

const round = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits

/**
 * Metrics that add up as the provider's example does: total_processed + in_progress + pending_retry =
 * total_recipients; every finished outcome counts as processed (telephony_failed is counted as failed,
 * the metrics having no field of its own); rows still queued count as in progress;
 * success = completed; success_rate = success / total_recipients × 100.
 */
export function batchMetrics(b: BatchRecord): BatchMetrics {
  const m = {
    completed: 0, failed: 0, busy: 0, no_answer: 0, socket_failure: 0, unreachable: 0,
    in_progress: 0, pending_retry: 0,
  }
  let connected = 0
  let talkSeconds = 0
  for (const row of b.rows) {
    switch (row.status) {
      case 'queued':
      case 'active':
        m.in_progress++
        break
      case 'pending_retry':
        m.pending_retry++
        break
      case 'telephony_failed':
        m.failed++
        break
      default:
        m[row.status]++
    }
    if (row.durationSeconds > 0 && row.status !== 'pending_retry') {
      connected++
      talkSeconds += row.durationSeconds
    }
  }
  const total = b.rows.length
  return {
    avg_duration_seconds: connected ? round(talkSeconds / connected, 1) : 0,
    busy_count: m.busy,
    completed_count: m.completed,
    failed_count: m.failed,
    in_progress_count: m.in_progress,
    no_answer_count: m.no_answer,
    pending_retry_count: m.pending_retry,
    socket_failure_count: m.socket_failure,
    success_count: m.completed,
    success_rate: total ? round((m.completed / total) * 100, 2) : 0,
    total_processed: m.completed + m.failed + m.busy + m.no_answer + m.socket_failure + m.unreachable,
    unreachable_count: m.unreachable,
  }
}

/** Batch lifecycle: pending → in_progress (rows queued behind the concurrency limit) → completed. */
export function createBatchRunner(options: { clock: Clock; speed: number; state: SandboxState; ids: Ids; timers: Timers }) {
  let engine: CallEngine | undefined
  const { clock, state, timers } = options
  return {
    attach(e: CallEngine) {
      engine = e
    },
    create(input: { tenant: DemoTenant; agent: DemoAgent; name: string; rows: Array<Record<string, string>> }): BatchRecord {
      const batch: BatchRecord = {
        id: options.ids.batchId(),
        tenantId: input.tenant.id,
        name: input.name,
        agentId: input.agent.id,
        status: 'pending',
        createdAt: clock.now(),
        updatedAt: null,
        finishedRows: 0,
        rows: input.rows.map((parameters) => ({ parameters, status: 'queued', durationSeconds: 0 })),
      }
      state.addBatch(batch)
      timers.after(Math.round((BATCH_START_DELAY_SECONDS * 1000) / options.speed), () => {
        batch.status = 'in_progress'
        batch.updatedAt = clock.now()
        batch.rows.forEach((row, i) => {
          engine!.startOrQueue({
            tenant: input.tenant,
            agent: input.agent,
            traceId: options.ids.traceId(),
            toPhone: row.parameters.customer_phone!,
            parameters: row.parameters,
            followUp: false,
            platformAttempt: 1,
            batch: { record: batch, row: i },
          })
        })
      })
      return batch
    },
    /** A row changed: the batch completes when no row is queued, active or waiting for a platform retry. */
    onRow(batch: BatchRecord, row: number) {
      batch.updatedAt = clock.now()
      const status = batch.rows[row]!.status
      if (status !== 'queued' && status !== 'active' && status !== 'pending_retry') batch.finishedRows++
      if (batch.status === 'in_progress' && batch.finishedRows === batch.rows.length) batch.status = 'completed'
    },
  }
}
export type BatchRunner = ReturnType<typeof createBatchRunner>
