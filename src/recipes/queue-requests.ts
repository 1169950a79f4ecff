import { HTTPError } from 'h3'
import { defineProcessingTask, runProcessingTask } from '../coordination/processing-task.ts'
import type { Runtime } from '../runtime.ts'
import type { RecipeInfo } from './engine.ts'
import { listRecipes } from './list-task.ts'
import { discardRecipeQueue, QueueControlError, recipeQueueCounts, retryRecipeEvents, type QueueCounts, type QueueRefusal, type RetryRange } from './queue-control.ts'

/** A queue operation asked for by a request: its count, or why it was refused (errors do not cross threads). */
type QueueControlOutcome = { ok: true; n: number } | { ok: false; refusal: QueueRefusal; message: string }

async function outcomeOf(operation: () => Promise<number>): Promise<QueueControlOutcome> {
  try {
    return { ok: true, n: await operation() }
  } catch (error) {
    if (error instanceof QueueControlError) return { ok: false, refusal: error.refusal, message: error.message }
    throw error
  }
}

/**
 * Counts, retry and discard as requests ask for them (the admin routes, the dashboard): in the processing thread
 * under `serve`, whose engine has the recipes loaded — the receiver's thread never loads a recipe file — and where
 * counting many dead rows and the paced chunks keep off the receiver's event loop.
 */
export const recipeQueueCountsTask = defineProcessingTask('recipeQueueCounts', async (rt, _args: Record<string, never>): Promise<Array<[string, QueueCounts]>> => [
  ...(await recipeQueueCounts(rt)),
])
export const recipeRetryTask = defineProcessingTask('recipeRetry', (rt, args: { name: string } & RetryRange) => outcomeOf(() => retryRecipeEvents(rt, args.name, args)), { recipeCode: true })
export const recipeDiscardTask = defineProcessingTask('recipeDiscard', (rt, args: { name: string }) => outcomeOf(() => discardRecipeQueue(rt, args.name)), { recipeCode: true })

function countOrThrow(outcome: QueueControlOutcome): number {
  if (outcome.ok) return outcome.n
  throw new HTTPError({ status: outcome.refusal === 'unknown' ? 404 : 409, message: outcome.message })
}

/** The recipes as the service runs them, with every recipe's queue (also removed recipes'), for a request. */
export async function listRecipesWithQueues(rt: Runtime): Promise<{ recipes: RecipeInfo[]; queues: Map<string, QueueCounts> }> {
  const [recipes, queues] = await Promise.all([listRecipes(rt), runProcessingTask(rt, recipeQueueCountsTask, {})])
  return { recipes, queues: new Map(queues) }
}

/** `recipes retry` for a request: how many were queued again; a refusal is a 404 (unknown) or a 409. */
export async function retryRecipeEventsNow(rt: Runtime, name: string, range: RetryRange = {}): Promise<number> {
  return countOrThrow(await runProcessingTask(rt, recipeRetryTask, { name, ...range }))
}

/** `recipes discard` for a request: how many were given up; a refusal is a 404 (unknown) or a 409. */
export async function discardRecipeQueueNow(rt: Runtime, name: string): Promise<number> {
  return countOrThrow(await runProcessingTask(rt, recipeDiscardTask, { name }))
}
