import { defineRecipe } from 'switchboard'

// A report recipe: mails yesterday's campaign report (HTML, plain text and a CSV attachment).
// Try it: npm run -s cli -- recipes run __NAME__ --dry-run
// Reference: docs/recipes.md (every ctx member, with examples).

// ── Settings ────────────────────────────────────────────────────────────────────────────────────
/** Recipients; empty uses REPORT_TO. */
const TO: string[] = []

export default defineRecipe({
  description: "Mails yesterday's campaign report at 08:00",
  // 08:00 every day in RECIPES_TIMEZONE.
  schedule: '0 8 * * *',
  async run(ctx) {
    const to = TO.length ? TO : ctx.config.mail.reportTo
    // The day before the tick's day (a tick caught up after midnight still reports the day it was due for);
    // a manual run has no tick: the day before today.
    const date = ctx.reports.yesterday(ctx.trigger.scheduledAt ?? ctx.now.getTime(), ctx.timezone)
    if (to.length === 0) {
      // Nobody to mail: build the figures and keep them in the run's summary.
      const report = await ctx.reports.buildDailyReport({ date, timezone: ctx.timezone })
      return { date, mailed: false, totals: report.totals }
    }
    // A dry run puts the mail in the plan instead of sending it.
    const sent = await ctx.reports.sendDailyReport({ date, timezone: ctx.timezone, to })
    return { date: sent.date, status: sent.status }
  },
})
