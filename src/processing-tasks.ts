import type { Runtime } from './runtime.ts'
import type { ProcessingTask } from './coordination/processing-task.ts'
import { dncImportTask } from './campaigns/dnc.ts'
import { destinationsOverviewTask, replayFailedTask } from './destinations/deliveries.ts'
import { recipeRunTask } from './recipes/run-now.ts'
import { recipeListTask } from './recipes/list-task.ts'
import { recipeDiscardTask, recipeQueueCountsTask, recipeRetryTask } from './recipes/queue-requests.ts'
import { reportPreviewTask, reportResendTask } from './reports/tasks.ts'
import { campaignFiguresTask } from './ui/campaign-figures.ts'
import { overviewCountsTask } from './ui/overview-counts.ts'
import { eventReplayTask } from './webhooks/replay-now.ts'

/**
 * Every task a request can hand to the processing thread (src/coordination/processing-task.ts), by name: the
 * thread runs what the main thread names. A task defined but not listed here would fail under `serve` ("no processing
 * task named …"); test/pipeline/processing-tasks.test.ts checks the list against every definition.
 */
const tasks: Array<ProcessingTask<never, unknown>> = [
  recipeRunTask, recipeListTask, overviewCountsTask, dncImportTask, reportPreviewTask, reportResendTask, destinationsOverviewTask, replayFailedTask, eventReplayTask,
  campaignFiguresTask, recipeQueueCountsTask, recipeRetryTask, recipeDiscardTask,
]

const byName = new Map(tasks.map((task) => [task.name, task]))

/** Runs the task named `name` with `args` (as received from the main thread); rejects for a name not listed. */
export function runTaskByName(rt: Runtime, name: string, args: unknown): Promise<unknown> {
  const task = byName.get(name)
  if (!task) return Promise.reject(new Error(`no processing task named "${name}"`))
  return (task.run as (rt: Runtime, args: unknown) => Promise<unknown>)(rt, args)
}

/** The names of the listed tasks (a test checks each task's name is listed once). */
export const processingTaskNames: readonly string[] = tasks.map((task) => task.name)
