import { defineProcessingTask, runProcessingTask } from '../coordination/processing-task.ts'
import type { Runtime } from '../runtime.ts'
import { EventBusyError, EventNotFoundError, replayEvent, type ProcessOutcome } from './processing.ts'

type ReplayTaskOutcome = { ok: true; outcome: ProcessOutcome } | { ok: false; problem: 'not_found' | 'busy'; message: string }

/**
 * A replay asked for over HTTP, run where events are processed. Under `serve` (and with `--role receiver`) the
 * process answering the request registers only the receiver's steps — no recipes — so a replay run there marked
 * the event processed without its recipes ever seeing it (a no_answer replayed from the dashboard never got its
 * follow-up). In the processing thread every step is registered.
 */
export const eventReplayTask = defineProcessingTask('eventReplay', async (rt, args: { eventId: string }): Promise<ReplayTaskOutcome> => {
  try {
    return { ok: true, outcome: await replayEvent(rt, args.eventId) }
  } catch (error) {
    if (error instanceof EventNotFoundError) return { ok: false, problem: 'not_found', message: error.message }
    if (error instanceof EventBusyError) return { ok: false, problem: 'busy', message: error.message }
    throw error
  }
})

/** Replays one stored event in the processing thread (see `eventReplayTask`); throws EventNotFoundError / EventBusyError. */
export async function replayEventNow(rt: Runtime, eventId: string): Promise<ProcessOutcome> {
  const result = await runProcessingTask(rt, eventReplayTask, { eventId })
  if (result.ok) return result.outcome
  throw result.problem === 'not_found' ? new EventNotFoundError(result.message) : new EventBusyError(result.message)
}
