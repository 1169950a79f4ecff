import { defineRecipe } from 'switchboard'

// ── Settings: edit these ────────────────────────────────────────────────────────────────────────
/** 08:00 every day in RECIPES_TIMEZONE (set TIMEZONE below to use another zone). */
const SCHEDULE = '0 8 * * *'
const TIMEZONE: string | undefined = undefined
/** Recipients; undefined uses REPORT_TO (comma-separated). */
const TO: string[] | undefined = undefined

export default defineRecipe({
  description: "Mails yesterday's campaign report (HTML, text and CSV) to REPORT_TO at 08:00",
  schedule: SCHEDULE,
  timezone: TIMEZONE,
  async run(ctx) {
    // The day before the tick's day, not before today: a tick caught up after midnight (the service was
    // down at 08:00) still reports the day it was due for. A manual run reports yesterday.
    const date = ctx.reports.yesterday(ctx.trigger.scheduledAt ?? ctx.now.getTime(), ctx.timezone)
    const to = TO ?? ctx.config.mail.reportTo
    if (to.length === 0) {
      // Nobody to mail: keep the figures in the log so the day is not lost.
      const report = await ctx.reports.buildDailyReport({ date, timezone: ctx.timezone })
      ctx.log.warn({ date, totals: report.totals }, 'REPORT_TO is not set: the daily report was built but not mailed')
      return { date, mailed: false, reason: 'REPORT_TO is not set', totals: report.totals }
    }
    const result = await ctx.reports.sendDailyReport({ date, timezone: ctx.timezone, to })
    if (result.status === 'failed') throw new Error(`the daily report for ${result.date} was not delivered: ${result.error ?? 'unknown error'}`)
    // `mailed` only once the relay took it (or, with no SMTP_URL, the .eml is in DATA_DIR/outbox). A queued
    // report waits in the outbox and the running service retries it: the summary says when.
    const mailed = result.status === 'sent' || result.status === 'written'
    const retry = result.status === 'queued' && result.nextAttemptAt !== undefined ? { next_attempt_at: new Date(result.nextAttemptAt).toISOString(), error: result.error ?? null } : {}
    return { date: result.date, mailed, status: result.status, to: result.to, subject: result.subject, file: result.file ?? null, ...retry }
  },
})
