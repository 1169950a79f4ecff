import { finishBeforeStopping } from '../utils/finish-before-stopping.ts'
import { CliError, defineCommand, intFlag, JSON_OPTION, limitOption } from '../cli-kit.ts'
import { cliName } from '../utils/cli-name.ts'
import { isMailAddress } from '../config/schema.ts'
import type { Effects } from '../effects.ts'
import { describeRefusal, formatMailbox, readAddressList } from '../utils/mail-addresses.ts'
import { snakeCaseKeys } from '../utils/snake-case.ts'
import { assertReportableDate, assertTimeZone } from './day-range.ts'
import { fmtBytes, fmtCount, fmtPct, fmtDuration } from './format.ts'
import { sendDailyReport } from './send-report.ts'
import { listMailLog, type MailStatus } from './mail-log.ts'

/**
 * `--to`, each given comma-separated, checked as REPORT_TO is: a mistake in it is the user's (exit 2), found
 * before anything runs. `--to ''` (a variable that is not set) names nobody: refused, not read as "no --to".
 */
function recipientsFlag(given: string[] | undefined): string[] | undefined {
  if (given === undefined) return undefined
  // Address lists read strictly: a comma inside a quoted display name ("Doe, John" <j@x>) does not split it, and
  // `a@x b@y` or `a@x\r\nBcc: e@y` is refused, not read as a display name or a header.
  const rule = 'must be email addresses, comma-separated, as REPORT_TO'
  const list = readAddressList(given)
  if (!list.ok) throw new CliError(describeRefusal('--to', rule, list.refusal))
  const addresses = list.mailboxes.map(formatMailbox)
  if (addresses.length === 0) throw new CliError('--to names no address (is the variable you passed set?); leave it out to send to REPORT_TO')
  const bad = addresses.find((a) => !isMailAddress(a))
  if (bad !== undefined) throw new CliError(describeRefusal('--to', rule, { entry: bad }))
  return addresses
}

/** `report send [--date YYYY-MM-DD] [--timezone Zone] [--to a@x,b@y] [--dry-run] [--json]` */
export const reportSendCommand = defineCommand({
  name: 'report send',
  // The day's calls are what the service stored: given another DATA_DIR (a relative one, run from another folder), it
  // reported an empty day from the database it had just created there.
  readsStoredData: true,
  usage: '[--date YYYY-MM-DD] [--timezone Zone] [--to addr,…] [--dry-run] [--json]',
  summary: 'build the daily campaign report and mail it (default: yesterday, to REPORT_TO); --dry-run prints it instead',
  options: {
    date: { type: 'string', value: 'YYYY-MM-DD', help: 'the day to report on (default: yesterday in the time zone)' },
    timezone: { type: 'string', value: 'Zone', help: 'an IANA time zone such as Asia/Kolkata: where the day begins and ends (default: RECIPES_TIMEZONE)' },
    to: { type: 'string', multiple: true, checksEmpty: true, value: 'addr,…', help: 'recipients, comma-separated or the option repeated (default: REPORT_TO)' },
    'dry-run': { type: 'boolean', help: 'build the report and print what would be sent; nothing is mailed or written' },
    json: JSON_OPTION,
  },
  examples: ['report send --dry-run', 'report send --date 2026-03-01 --to ops@example.com'],
  async run(ctx) {
    const date = ctx.values.date as string | undefined
    const timezone = ctx.values.timezone as string | undefined
    const to = recipientsFlag(ctx.values.to as string[] | undefined)
    const dryRun = ctx.values['dry-run'] === true
    const check = (flag: string, fn: () => void) => {
      try {
        fn()
      } catch (error) {
        throw new CliError(`--${flag}: ${(error as Error).message}`)
      }
    }
    if (date !== undefined) check('date', () => assertReportableDate(date))
    if (timezone !== undefined) check('timezone', () => assertTimeZone(timezone))
    const rt = await ctx.runtime()
    // A dry run sends nothing, so it needs no recipient: it shows what the report would say.
    if (!dryRun && !to?.length && rt.config.mail.reportTo.length === 0) throw new CliError('no recipient: set REPORT_TO or pass --to someone@example.com')
    const effects: Effects = { dryRun, plan: [] }
    // Stopped while the relay has the report, the command left it neither known sent nor unsent, without a word: the
    // running service sent it again once this command's claim lapsed, and the relay delivered both.
    const send = () => sendDailyReport(rt, { date, timezone, to }, effects)
    const result = dryRun
      ? await send()
      : await finishBeforeStopping(send, (text) => ctx.writeErr(text), {
          first: 'report send: finishing the send first, so the report is neither lost nor sent twice (the relay may take up to 10 minutes to answer); Ctrl-C again to stop now\n',
          second: `report send: stopped while the report was being sent: it may have gone out, and the running service sends it again once this command's claim lapses (2 minutes) — see "${cliName(ctx.env)} mail list"\n`,
        })
    // A day asked for by hand that has not ended (today, a typo's future year): its report is partial or empty, and says
    // nothing of why. On stderr, so --json output stays as it is.
    const now = rt.clock.now()
    if (date !== undefined && result.report.endMs > now) {
      ctx.writeErr(result.report.startMs > now
        ? `note: ${date} has not begun yet in ${result.report.timezone}: the report has nothing in it\n`
        : `note: ${date} has not ended yet in ${result.report.timezone}: the report covers it up to now\n`)
    }
    const t = result.report.totals
    if (ctx.values.json) {
      const { conversations: _rows, ...figures } = result.report
      ctx.json(snakeCaseKeys({
        dryRun,
        status: result.status,
        // A dry run records no mail: no id to look up in `mail list`.
        mailId: dryRun ? null : result.mailId,
        messageId: result.messageId ?? null,
        file: result.file ?? null,
        error: result.error ?? null,
        nextAttemptAt: result.nextAttemptAt === undefined ? null : new Date(result.nextAttemptAt).toISOString(),
        to: result.to,
        refused: (result.refused ?? []).map((r) => ({
          mailId: r.mailId,
          recipients: r.recipients,
          status: r.status,
          error: r.error,
          nextAttemptAt: r.nextAttemptAt === undefined ? null : new Date(r.nextAttemptAt).toISOString(),
        })),
        subject: result.subject,
        attachment: result.attachment,
        plan: effects.plan,
        report: figures,
      }))
    } else if (result.status === 'queued') {
      // One line: what happened, that nothing is lost, and where to look.
      const when = result.nextAttemptAt ? ` next attempt ${new Date(result.nextAttemptAt).toISOString()}` : ''
      ctx.write(
        `queued: the SMTP relay did not take the report (${result.error ?? 'busy'}); it waits in the outbox and the running service retries it — one started with SMTP_URL set (mail ${result.mailId},${when}; see "${cliName(ctx.env)} mail list")\n`,
      )
      // Refused for good for others meanwhile (550 for one, 450 for another): said here too, as the exit code says it.
      const refused = refusedLines(result.refused)
      if (refused.length) ctx.write(`${refused.join('\n')}\n`)
    } else if (result.status === 'failed') {
      throw new CliError(`the report was not sent: ${result.error ?? 'unknown error'} (mail ${result.mailId})`, 1)
    } else {
      const head = dryRun ? 'dry run — nothing sent or written. Would send:' : `${result.status}:`
      ctx.write(
        [
          `${head}`,
          `  to:       ${result.to.length ? result.to.join(', ') : '(nobody: set REPORT_TO or pass --to to send it)'}`,
          `  subject:  ${result.subject}`,
          // Without --date the day is yesterday where the campaign runs, which is not always the day a user just called on.
          ...(date === undefined ? [`  day:      ${result.date}, yesterday in ${result.timezone} (--date YYYY-MM-DD for another day)`] : []),
          `  attached: ${result.attachment.filename} (${fmtCount(t.calls, 'rows')}${result.attachment.zipped ? `; zipped: ${fmtBytes(result.attachment.csvBytes)} of CSV in ${fmtBytes(result.attachment.bytes)}` : ''})`,
          `  figures:  ${fmtCount(t.calls, 'calls')} · connect ${fmtPct(t.connectRate)} · success ${fmtPct(t.successRate)} · avg ${fmtDuration(t.avgDurationSeconds)}`,
          ...(result.messageId ? [`  message:  ${result.messageId}`] : []),
          ...(result.file ? [`  file:     ${result.file}`] : []),
          ...(result.error ? [`  error:    ${result.error}`] : []),
          // The relay took it for the others: say who did not get it, and whether the outbox tries them again.
          ...refusedLines(result.refused),
          '',
        ].join('\n'),
      )
    }
    // A recipient refused for good did not get the report: the command did not do all it was asked.
    if (result.status === 'failed' || result.refused?.some((r) => r.status === 'failed')) return 1
  },
})

/** One line per recipient the relay refused: who, its reply, and whether the outbox tries them again. */
function refusedLines(refused: Array<{ recipients: string[]; error: string; status: string; nextAttemptAt?: number; mailId: string }> | undefined): string[] {
  return (refused ?? []).map(
    (r) =>
      `  refused:  ${r.recipients.join(', ')} — ${r.error} (${
        r.status === 'failed' ? 'for good; not sent to them' : `for now; retried${r.nextAttemptAt ? ` at ${new Date(r.nextAttemptAt).toISOString()}` : ''}`
      }, mail ${r.mailId})`,
  )
}

/** The most rows one `mail list` prints. */
const MAIL_LIST_MAX = 10_000

/** `mail list [--status queued|sent|written|failed] [--limit N] [--json]`: the mail log, the outbox first. */
export const mailListCommand = defineCommand({
  name: 'mail list',
  readsStoredData: true,
  usage: '[--status queued|sent|written|failed] [--limit N] [--json]',
  summary: 'list sent and pending mail (queued = waiting in the outbox for the SMTP relay, with its next attempt)',
  options: {
    status: { type: 'string', value: 'S', help: 'only mail in this state: queued (waiting for the SMTP relay), sent, written (to DATA_DIR/outbox, no SMTP set) or failed' },
    limit: limitOption(MAIL_LIST_MAX),
    json: JSON_OPTION,
  },
  async run(ctx) {
    const status = ctx.values.status as string | undefined
    const statuses: MailStatus[] = ['queued', 'sent', 'written', 'failed']
    if (status !== undefined && !statuses.includes(status as MailStatus)) throw new CliError(`--status must be one of ${statuses.join(', ')} (got "${status}")`)
    const limit = intFlag(ctx.values, 'limit', 50)!
    if (limit < 1 || limit > MAIL_LIST_MAX) throw new CliError(`--limit must be from 1 to ${MAIL_LIST_MAX} (got ${limit})`)
    const rt = await ctx.runtime()
    const rows = await listMailLog(rt, limit, status as MailStatus | undefined)
    // Times as ISO 8601, as in every other --json listing (`events list`, `calls list`, `recipes runs`).
    const isoOrNull = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())
    if (ctx.values.json) return ctx.json(snakeCaseKeys(rows.map((r) => ({ ...r, nextAttemptAt: isoOrNull(r.nextAttemptAt), createdAt: isoOrNull(r.createdAt), updatedAt: isoOrNull(r.updatedAt) }))))
    const iso = (ms: number | null) => isoOrNull(ms) ?? ''
    ctx.table(
      rows.map((r) => ({
        id: r.id,
        status: r.status,
        attempts: r.attempts,
        next_attempt: iso(r.nextAttemptAt),
        created: iso(r.createdAt),
        to: r.recipients.join(', '),
        subject: r.subject,
        error: r.error ?? '',
      })),
    )
  },
})
