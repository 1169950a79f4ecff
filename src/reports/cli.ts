import { CliError, defineCommand } from '../utils/cli-kit.ts'
import type { Effects } from '../utils/effects.ts'
import { assertTimeZone, parseDate } from './day-range.ts'
import { fmtPct, fmtSeconds } from './format.ts'
import { sendDailyReport } from './send-report.ts'

/** `report send [--date YYYY-MM-DD] [--timezone Zone] [--to a@x,b@y] [--dry-run] [--json]` */
export const reportSendCommand = defineCommand({
  name: 'report send',
  usage: '[--date YYYY-MM-DD] [--timezone Zone] [--to addr,…] [--dry-run] [--json]',
  summary: 'build the daily campaign report and mail it (default: yesterday, to REPORT_TO); --dry-run prints it instead',
  options: {
    date: { type: 'string' },
    timezone: { type: 'string' },
    to: { type: 'string', multiple: true },
    'dry-run': { type: 'boolean' },
    json: { type: 'boolean' },
  },
  async run(ctx) {
    const date = ctx.values.date as string | undefined
    const timezone = ctx.values.timezone as string | undefined
    const to = ctx.values.to as string[] | undefined
    const dryRun = ctx.values['dry-run'] === true
    const check = (flag: string, fn: () => void) => {
      try {
        fn()
      } catch (error) {
        throw new CliError(`--${flag}: ${(error as Error).message}`)
      }
    }
    if (date !== undefined) check('date', () => parseDate(date))
    if (timezone !== undefined) check('timezone', () => assertTimeZone(timezone))
    const rt = await ctx.runtime()
    if (!to?.length && rt.config.mail.reportTo.length === 0) throw new CliError('no recipient: set REPORT_TO or pass --to someone@example.com')
    const effects: Effects = { dryRun, plan: [] }
    const result = await sendDailyReport(rt, { date, timezone, to }, effects)
    const t = result.report.totals
    if (ctx.values.json) {
      const { conversations: _rows, ...figures } = result.report
      ctx.json({
        dryRun,
        status: result.status,
        mailId: result.mailId,
        messageId: result.messageId ?? null,
        file: result.file ?? null,
        error: result.error ?? null,
        to: result.to,
        subject: result.subject,
        plan: effects.plan,
        report: figures,
      })
    } else {
      const head = dryRun ? 'dry run — nothing sent or written. Would send:' : `${result.status}:`
      ctx.write(
        [
          `${head}`,
          `  to:       ${result.to.join(', ')}`,
          `  subject:  ${result.subject}`,
          `  attached: conversations-${result.date}.csv (${t.calls} rows)`,
          `  figures:  ${t.calls} calls · connect ${fmtPct(t.connectRate)} · success ${fmtPct(t.successRate)} · avg ${fmtSeconds(t.avgDurationSeconds)}`,
          ...(result.messageId ? [`  message:  ${result.messageId}`] : []),
          ...(result.file ? [`  file:     ${result.file}`] : []),
          ...(result.error ? [`  error:    ${result.error}`] : []),
          '',
        ].join('\n'),
      )
    }
    if (result.status === 'failed') return 1
  },
})
