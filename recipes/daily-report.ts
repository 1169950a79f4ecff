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
    const to = TO ?? ctx.config.mail.reportTo
    if (to.length === 0) {
      // Nobody to mail: keep the figures in the log so the day is not lost.
      const date = ctx.reports.yesterday(ctx.now.getTime(), ctx.timezone)
      const report = await ctx.reports.buildDailyReport({ date, timezone: ctx.timezone })
      ctx.log.warn({ date, totals: report.totals }, 'REPORT_TO is not set: the daily report was built but not mailed')
      return { date, mailed: false, reason: 'REPORT_TO is not set', totals: report.totals }
    }
    const result = await ctx.reports.sendDailyReport({ timezone: ctx.timezone, to })
    if (result.status === 'failed') throw new Error(`the daily report for ${result.date} was not delivered: ${result.error ?? 'unknown error'}`)
    return { date: result.date, mailed: result.status !== 'planned', status: result.status, to: result.to, subject: result.subject, file: result.file ?? null }
  },
})
