import { defineRecipe } from 'switchboard'

// ── Settings: edit these ────────────────────────────────────────────────────────────────────────
/** 08:00 every day in RECIPES_TIMEZONE (set TIMEZONE below to use another zone). */
const SCHEDULE = '0 8 * * *'
const TIMEZONE: string | undefined = undefined
/** Recipients; undefined uses REPORT_TO (comma-separated). */
const TO: string[] | undefined = undefined
/** Days a failed or missed run left unreported are sent by the next scheduled run, at most this many back. */
const MAX_CATCH_UP_DAYS = 7

const DAY_MS = 86_400_000
/** The calendar days strictly between `last` and `until` (YYYY-MM-DD), the newest MAX_CATCH_UP_DAYS of them. */
function daysBetween(last: string, until: string): string[] {
  const days: string[] = []
  const end = Date.parse(`${until}T00:00:00Z`)
  for (let t = Date.parse(`${last}T00:00:00Z`) + DAY_MS; t < end; t += DAY_MS) days.push(new Date(t).toISOString().slice(0, 10))
  return days.slice(-MAX_CATCH_UP_DAYS)
}

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
    // A scheduled run first sends the days a failed or missed run left unreported (the recipe's state keeps the
    // last day a scheduled run handed to the relay or the outbox): a run that failed on a database error, or was cut
    // short by a restart, is made good the next morning instead of its day never being mailed. A manual run, and a
    // dry run, report just their day.
    const scheduled = (ctx.trigger.type === 'cron' || ctx.trigger.type === 'catchup') && !ctx.dryRun
    const last = scheduled ? await ctx.state.get<string>('lastReportedDay') : undefined
    // The day a scheduled run was handing over when it was cut short: if the mail log has that day's report, the
    // relay or the outbox took it before the restart, and it is not mailed a second time.
    const sending = scheduled ? await ctx.state.get<string>('sendingDay') : undefined
    const handedOver = async (day: string) => day === sending && (await ctx.reports.findReportMail({ date: day, timezone: ctx.timezone, to })) !== undefined
    const caughtUp: string[] = []
    // A day the relay refused for good (a 5xx: too large, say) is not sent again by the next runs, which would fail on
    // it first every morning and never reach the days after it: it is passed over, the others go, and the run fails
    // at the end naming it (the dashboard's Mail page can resend it once the cause is fixed).
    const refusedDays: string[] = []
    for (const day of last ? daysBetween(last, date) : []) {
      if (!(await handedOver(day))) {
        await ctx.state.set('sendingDay', day)
        const earlier = await ctx.reports.sendDailyReport({ date: day, timezone: ctx.timezone, to })
        if (earlier.status === 'failed') refusedDays.push(`${day} (${earlier.error ?? 'unknown error'})`)
        else caughtUp.push(day)
      }
      await ctx.state.set('lastReportedDay', day)
    }
    const notDelivered = () => new Error(`the daily report for ${refusedDays.join(', ')} was not delivered; the relay refused it for good, so the next runs do not send it again${caughtUp.length ? ` (sent: ${caughtUp.join(', ')})` : ''}`)
    if (scheduled && (await handedOver(date))) {
      if (!last || date > last) await ctx.state.set('lastReportedDay', date)
      if (refusedDays.length) throw notDelivered()
      return { date, mailed: true, already_handed_over: true, ...(caughtUp.length ? { caught_up: caughtUp } : {}) }
    }
    if (scheduled) await ctx.state.set('sendingDay', date)
    const result = await ctx.reports.sendDailyReport({ date, timezone: ctx.timezone, to })
    // The run's own day, refused: tomorrow's run tries it once more, as a day to catch up (then passes it over).
    if (result.status === 'failed') throw new Error(`the daily report for ${result.date} was not delivered: ${result.error ?? 'unknown error'}${refusedDays.length ? `; nor for ${refusedDays.join(', ')}, which the next runs do not send again` : ''}`)
    if (scheduled && (!last || date > last)) await ctx.state.set('lastReportedDay', date)
    if (refusedDays.length) throw notDelivered()
    // `mailed` only once the relay took it (or, with no SMTP_URL, the .eml is in DATA_DIR/outbox). A queued
    // report waits in the outbox and the running service retries it: the summary says when.
    const mailed = result.status === 'sent' || result.status === 'written'
    const retry = result.status === 'queued' && result.nextAttemptAt !== undefined ? { next_attempt_at: new Date(result.nextAttemptAt).toISOString(), error: result.error ?? null } : {}
    // Recipients the relay refused while it took the report for the others (retried, or refused for good).
    const refused = result.refused?.length ? { refused: result.refused.map((r) => ({ to: r.recipients, status: r.status, error: r.error })) } : {}
    return { date: result.date, mailed, status: result.status, to: result.to, subject: result.subject, file: result.file ?? null, ...retry, ...refused, ...(caughtUp.length ? { caught_up: caughtUp } : {}) }
  },
})
