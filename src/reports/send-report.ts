import type { Runtime } from '../runtime.ts'
import type { Effects } from '../effects.ts'
import { buildDailyReport, type DailyReport } from './build-report.ts'
import { assertTimeZone, parseDate, yesterday } from './day-range.ts'
import { renderDailyReport } from './render-report.ts'
import { sendMail, type MailResult } from './send-mail.ts'

export interface SendReportOptions {
  /** YYYY-MM-DD; defaults to yesterday in `timezone`. */
  date?: string
  /** Defaults to RECIPES_TIMEZONE. */
  timezone?: string
  /** Defaults to REPORT_TO. */
  to?: string | string[]
}

export interface SendReportResult {
  mailId: string
  status: MailResult['status']
  messageId?: string
  file?: string
  error?: string
  /** A queued report: when the outbox tries it next (epoch ms). */
  nextAttemptAt?: number
  date: string
  timezone: string
  to: string[]
  subject: string
  report: DailyReport
}

/** Builds, renders and mails the daily report (the `daily-report` recipe and `report send` call this). */
export async function sendDailyReport(rt: Runtime, options: SendReportOptions, effects: Effects): Promise<SendReportResult> {
  const timezone = options.timezone ?? rt.config.recipes.timezone
  assertTimeZone(timezone)
  const date = options.date ?? yesterday(rt.clock.now(), timezone)
  parseDate(date)
  const to = (options.to === undefined ? rt.config.mail.reportTo : Array.isArray(options.to) ? options.to : [options.to])
    .flatMap((t) => t.split(','))
    .map((t) => t.trim())
    .filter(Boolean)
  if (to.length === 0 && !effects.dryRun) throw new Error('no recipient for the daily report: set REPORT_TO (or pass --to)')
  const report = await buildDailyReport(rt, { date, timezone })
  const rendered = renderDailyReport(report)
  const result = await sendMail(
    rt,
    {
      to,
      subject: rendered.subject,
      text: rendered.text,
      html: rendered.html,
      attachments: [{ filename: rendered.csvFilename, content: rendered.csv, contentType: 'text/csv; charset=utf-8' }],
    },
    effects,
  )
  return {
    mailId: result.id,
    status: result.status,
    ...(result.messageId ? { messageId: result.messageId } : {}),
    ...(result.file ? { file: result.file } : {}),
    ...(result.error ? { error: result.error } : {}),
    ...(result.nextAttemptAt ? { nextAttemptAt: result.nextAttemptAt } : {}),
    date,
    timezone,
    to,
    subject: rendered.subject,
    report,
  }
}
