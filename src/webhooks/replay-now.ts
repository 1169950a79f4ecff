import { defineProcessingTask, isProcessedElsewhere, runProcessingTask } from '../coordination/processing-task.ts'
import type { Runtime } from '../runtime.ts'
import { sleep } from '../utils/clock.ts'
import { EventBusyError, EventNotFoundError, replayEvent, requeueEvent, type ProcessOutcome } from './processing.ts'
import { webhookState } from './state.ts'

/** What a replay asked for over HTTP came to: processed here or in the processing thread, or queued for the workers. */
export type ReplayNowOutcome = ProcessOutcome | { eventId: string; status: 'queued'; attempts: number; error?: string }

type ReplayTaskOutcome = { ok: true; outcome: ReplayNowOutcome } | { ok: false; problem: 'not_found' | 'busy'; message: string }

/** How long a replay queued for the workers (no processing in this process) waits to report their outcome. */
export const QUEUED_REPLAY_WAIT_MS = 10_000
const POLL_MS = 200

/**
 * A replay asked for over HTTP, run where events are processed. Under `serve` the process answering the request
 * registers only the receiver's steps — no recipes — so a replay run there marked the event processed without its
 * recipes ever seeing it (a no_answer replayed from the dashboard never got its follow-up). In the processing
 * thread every step is registered. A process whose events others process (`--role receiver`, or `serve` while its
 * processing thread restarts: `setProcessedElsewhere`) queues the event for the workers instead, as `events replay`
 * does, and reports their outcome if it comes within QUEUED_REPLAY_WAIT_MS.
 */
export const eventReplayTask = defineProcessingTask('eventReplay', async (rt, args: { eventId: string }): Promise<ReplayTaskOutcome> => {
  try {
    if (!webhookState(rt).worker && isProcessedElsewhere(rt)) return { ok: true, outcome: await queueForWorkers(rt, args.eventId) }
    return { ok: true, outcome: await replayEvent(rt, args.eventId) }
  } catch (error) {
    if (error instanceof EventNotFoundError) return { ok: false, problem: 'not_found', message: error.message }
    if (error instanceof EventBusyError) return { ok: false, problem: 'busy', message: error.message }
    throw error
  }
})

async function queueForWorkers(rt: Runtime, eventId: string): Promise<ReplayNowOutcome> {
  if (!(await requeueEvent(rt, eventId))) throw new EventNotFoundError(`no webhook event with id "${eventId}"`)
  const deadline = rt.clock.now() + QUEUED_REPLAY_WAIT_MS
  for (;;) {
    const row = await rt.store.db.selectFrom('webhook_events').select(['status', 'attempts', 'last_error']).where('event_id', '=', eventId).executeTakeFirst()
    if (!row) throw new EventNotFoundError(`no webhook event with id "${eventId}"`)
    const error = row.last_error ?? undefined
    if (row.status === 'processed' || row.status === 'failed' || row.status === 'dead') return { eventId, status: row.status, attempts: row.attempts, ...(error ? { error } : {}) }
    if (rt.clock.now() >= deadline) return { eventId, status: 'queued', attempts: row.attempts }
    await sleep(rt.clock, POLL_MS)
  }
}

/** Replays one stored event in the processing thread (see `eventReplayTask`); throws EventNotFoundError / EventBusyError. */
export async function replayEventNow(rt: Runtime, eventId: string): Promise<ReplayNowOutcome> {
  const result = await runProcessingTask(rt, eventReplayTask, { eventId })
  if (result.ok) return result.outcome
  throw result.problem === 'not_found' ? new EventNotFoundError(result.message) : new EventBusyError(result.message)
}
