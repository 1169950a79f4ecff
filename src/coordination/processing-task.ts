import type { Runtime } from '../runtime.ts'

/**
 * Work that an HTTP request asks for but that is too heavy for the receiver's event loop (a day's report reads
 * every conversation of the day; a do-not-call import parses 5 MB). A feature defines its task beside the code
 * that asks for it and runs it with `runProcessingTask`: under `serve` it runs in the processing thread, which
 * knows every task by name (src/processing-tasks.ts lists them); without one (`--role receiver`, an in-memory
 * database, tests) it runs where it is asked. Arguments and results cross the thread boundary: plain data only.
 * The trade: while the thread drains a burst these requests answer more slowly (a task waits for the thread's current
 * batch), and the receiver's answers do not.
 */
export interface ProcessingTask<Args, Result> {
  readonly name: string
  /**
   * It loads or runs recipe code (listing, Run now, a queue's retry): under `serve` it never runs on the receiver's
   * thread — between a processing thread's death and its restart it waits for the new thread rather than running here,
   * where a recipe's top-level `while (true)` would stop the receiver.
   */
  readonly recipeCode: boolean
  run(rt: Runtime, args: Args): Promise<Result>
}

export function defineProcessingTask<Args, Result>(name: string, run: (rt: Runtime, args: Args) => Promise<Result>, options: { recipeCode?: boolean } = {}): ProcessingTask<Args, Result> {
  return { name, run, recipeCode: options.recipeCode === true }
}

/**
 * Sends a task by name to where it runs, or answers undefined to run it here (no processing thread running now) —
 * never for a task that runs recipe code (`recipeCode`), which waits for the thread instead.
 */
export type ProcessingTaskRunner = (name: string, args: unknown, recipeCode: boolean) => Promise<unknown> | undefined

const runners = new WeakMap<Runtime, ProcessingTaskRunner>()

/** Installed by the processing thread's host (src/processing-host.ts) while it runs; `undefined` removes it. */
export function setProcessingTaskRunner(rt: Runtime, runner: ProcessingTaskRunner | undefined): void {
  if (runner) runners.set(rt, runner)
  else runners.delete(rt)
}

/** Runs a task in the processing thread when one is running, else on this thread. */
export async function runProcessingTask<Args, Result>(rt: Runtime, task: ProcessingTask<Args, Result>, args: Args): Promise<Result> {
  const sent = runners.get(rt)?.(task.name, args, task.recipeCode)
  return sent ? ((await sent) as Result) : task.run(rt, args)
}

const processedElsewhere = new WeakSet<Runtime>()

/**
 * Marks a runtime whose events other processes or threads process (`--role receiver`, and `serve`'s main thread
 * beside its processing thread): work that needs every processing step — a replay — is handed to them rather than
 * done here, where those steps are not registered. Unmarked (tests, embedders), such work runs here.
 */
export function setProcessedElsewhere(rt: Runtime, elsewhere: boolean): void {
  if (elsewhere) processedElsewhere.add(rt)
  else processedElsewhere.delete(rt)
}

export function isProcessedElsewhere(rt: Runtime): boolean {
  return processedElsewhere.has(rt)
}
