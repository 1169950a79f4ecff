import type { Runtime } from '../runtime.ts'
import type { Effects } from '../effects.ts'
import { buildDailyReport, type DailyReport } from './build-report.ts'
import { assertTimeZone, parseDate, yesterday } from './day-range.ts'
import { renderDailyReport } from './render-report.ts'
import { sendMail, type MailResult } from './send-mail.ts'
import { strictRecipients } from '../utils/mail-addresses.ts'
import { findHandedOverMail, type MailLogEntry } from './mail-log.ts'
import { subjectFor } from './format.ts'

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
  /** Recipients the relay refused while it took the report for the others (`queued`: retried; `failed`: for good). */
  refused?: MailResult['refused']
  date: string
  timezone: string
  to: string[]
  subject: string
  /** The file attached: the day's CSV, or that CSV zipped past PLAIN_CSV_MAX_BYTES (src/reports/csv-attachment.ts). */
  attachment: { filename: string; zipped: boolean; csvBytes: number; bytes: number }
  report: DailyReport
}

/** Builds, renders and mails the daily report (the `daily-report` recipe and `report send` call this). */
export async function sendDailyReport(rt: Runtime, options: SendReportOptions, effects: Effects): Promise<SendReportResult> {
  const { timezone, to } = reportAudience(rt, options)
  const date = options.date ?? yesterday(rt.clock.now(), timezone)
  parseDate(date)
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
      attachments: [{ filename: rendered.attachment.filename, content: rendered.attachment.content, contentType: rendered.attachment.contentType! }],
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
    ...(result.refused?.length ? { refused: result.refused } : {}),
    date,
    timezone,
    to,
    subject: rendered.subject,
    attachment: {
      filename: rendered.attachment.filename,
      zipped: rendered.attachment.zipped,
      csvBytes: rendered.attachment.csvBytes,
      bytes: typeof rendered.attachment.content === 'string' ? Buffer.byteLength(rendered.attachment.content) : rendered.attachment.content.length,
    },
    report,
  }
}

/**
 * One day's report as already handed to the relay or the outbox (queued, sent or written) for every recipient of
 * `to` (default REPORT_TO), or undefined: a run cut short after the hand-over (a restart before it recorded the
 * day) must not mail the day again, while a report someone sent to themselves does not count for the team.
 */
export async function findReportMail(rt: Runtime, options: { date: string; timezone?: string; to?: string | string[] }): Promise<MailLogEntry | undefined> {
  const { timezone, to } = reportAudience(rt, options)
  parseDate(options.date)
  return findHandedOverMail(rt, subjectFor(options.date, timezone), to)
}

/**
 * The zone a report's day is counted in (default RECIPES_TIMEZONE, checked) and its recipients (default REPORT_TO),
 * read strictly as REPORT_TO is: a comma inside a quoted display name ("Doe, John" <j@x>) is part of it; `a@x b@y` is refused.
 */
function reportAudience(rt: Runtime, options: Pick<SendReportOptions, 'timezone' | 'to'>): { timezone: string; to: string[] } {
  const timezone = options.timezone ?? rt.config.recipes.timezone
  assertTimeZone(timezone)
  return { timezone, to: options.to === undefined ? rt.config.mail.reportTo : strictRecipients(options.to, 'the report\'s recipients (to)') }
}
