import type { Runtime } from './runtime.ts'
import { buildDailyReport } from './reports/build-report.ts'
import { renderHtml } from './reports/html-render.ts'
import { sendDailyReport } from './reports/send-report.ts'
import { liveEffects } from './utils/effects.ts'
import { importDncCsv, type DncImportResult } from './campaigns/dnc.ts'
import { BrokenRecipeError, recipeEngineFor, UnknownRecipeError } from './recipes/engine.ts'
import type { RecipeRun } from './recipes/runner.ts'
import { overviewCounts, type OverviewCounts } from './ui/overview-counts.ts'

/** A recipe run asked for by a request: the run as recorded, or why it could not start. */
export type ManualRunOutcome =
  | { ok: true; run: Omit<RecipeRun, 'result'> }
  | { ok: false; problem: 'unknown' | 'broken'; message: string }

/**
 * Work that an HTTP request asks for but that is too heavy for the receiver's event loop: building a day's
 * report reads every conversation of the day (100,000 rows: a second or two of synchronous SQLite and
 * JavaScript), and webhooks arriving meanwhile would wait for it. Under `serve` such a task runs in the
 * processing thread, beside the recipes that build the same report; without one (`--role receiver`, an
 * in-memory database, tests) it runs where it is asked. Arguments and results cross the thread boundary, so
 * both are plain data. The trade: while the thread drains a burst these pages answer more slowly (the task
 * waits for the thread's current batch), and the receiver's answers do not.
 */
export const processingTasks = {
  /** "Run now" from the dashboard or `POST /admin/recipes/:name/run`: a nightly batch or a sweep is seconds of work. */
  async recipeRun(rt: Runtime, args: { name: string; dryRun: boolean }): Promise<ManualRunOutcome> {
    try {
      // `result` is what `run` returned, unserialized: it may not cross a thread, and the recorded `summary` says it.
      const { result: _result, ...run } = await recipeEngineFor(rt).run(args.name, { dryRun: args.dryRun })
      return { ok: true, run }
    } catch (error) {
      if (error instanceof UnknownRecipeError) return { ok: false, problem: 'unknown', message: error.message }
      if (error instanceof BrokenRecipeError) return { ok: false, problem: 'broken', message: error.message }
      throw error
    }
  },
  /** The dashboard overview's counts (refreshed every 15 s while it is open). */
  async overviewCounts(rt: Runtime, args: { now: number }): Promise<OverviewCounts> {
    return overviewCounts(rt, args.now)
  },
  /** A do-not-call CSV from the dashboard: up to 5 MB, every number parsed and normalised (seconds for the largest). */
  async dncImport(rt: Runtime, args: { text: string; source: string }): Promise<DncImportResult> {
    return importDncCsv(rt, args.text, args.source)
  },
  /** The report of a day as mailed (HTML only: the preview shows no attachment). */
  async reportPreview(rt: Runtime, args: { date: string }): Promise<string> {
    return renderHtml(await buildDailyReport(rt, { date: args.date }))
  },
  /** Builds a day's report again and mails it to the given recipients (the dashboard's Resend). */
  async reportResend(rt: Runtime, args: { date: string; timezone: string; to: string[] }): Promise<{ mailId: string; status: string }> {
    const result = await sendDailyReport(rt, args, liveEffects())
    return { mailId: result.mailId, status: result.status }
  },
}

export type ProcessingTasks = typeof processingTasks
export type ProcessingTaskName = keyof ProcessingTasks
export type TaskArgs<N extends ProcessingTaskName> = Parameters<ProcessingTasks[N]>[1]
export type TaskResult<N extends ProcessingTaskName> = Awaited<ReturnType<ProcessingTasks[N]>>
