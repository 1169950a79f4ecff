import { defineProcessingTask } from '../coordination/processing-task.ts'
import { liveEffects } from '../effects.ts'
import { buildDailyReport } from './build-report.ts'
import { renderHtml } from './html-render.ts'
import { sendDailyReport } from './send-report.ts'

/**
 * The dashboard's report pages, off the receiver's loop: building a day's report reads every conversation of the
 * day (100,000 rows: a second or two of synchronous SQLite and JavaScript), and webhooks arriving meanwhile would
 * wait for it.
 */

/** The report of a day as mailed (HTML only: the preview shows no attachment). */
export const reportPreviewTask = defineProcessingTask('reportPreview', async (rt, args: { date: string }) => renderHtml(await buildDailyReport(rt, { date: args.date })))

/** Builds a day's report again and mails it to the given recipients (the dashboard's Resend). */
export const reportResendTask = defineProcessingTask('reportResend', async (rt, args: { date: string; timezone: string; to: string[] }) => {
  const result = await sendDailyReport(rt, args, liveEffects())
  return { mailId: result.mailId, status: result.status }
})
