import type { DailyReport } from './build-report.ts'
import { SEARCHED_BATCHES } from './batch-metrics.ts'
import { rate, type CountItem, type Figures } from './figures.ts'
import { fmtCount, fmtDelta, fmtInt, fmtPct, fmtDuration, subjectFor } from './format.ts'
import { escapeHtml as e } from './html-escape.ts'
import { attachmentNote, type AttachedCsv } from './csv-attachment.ts'
import { generatedAt } from './generated-at.ts'
import { BATCHES_PER_RECIPIENT, CALLS_ARE_ATTEMPTS } from './counting-units.ts'
import { GROUPS_IN_MAIL, shownGroups } from './shown-groups.ts'
import { htmlLabel as l } from './shown-label.ts'

/**
 * The report as an HTML email. Mail clients strip <style> blocks and scripts and block remote images, so
 * every style is inline, layout is tables, and charts are divs with percentage widths (horizontal bars) or
 * pixel heights (the trend). Widths are fluid up to 600 px; long ids and reasons wrap. Strings from the data are
 * shown through `l` (htmlLabel): escaped, and cut at LABEL_MAX characters so a webhook cannot make the mail huge.
 */

const FONT = "font-family:-apple-system,BlinkMacSystemFont,'Segoe UI',Roboto,Helvetica,Arial,sans-serif"
const INK = '#1f2937'
const MUTED = '#6b7280'
const LINE = '#e5e7eb'
const WRAP = 'overflow-wrap:anywhere;word-break:break-word'

const STATUS_COLORS: Record<string, string> = {
  completed: '#16a34a',
  socket_failure: '#0d9488',
  no_answer: '#d97706',
  busy: '#ea580c',
  failed: '#dc2626',
  telephony_failed: '#9333ea',
  unreachable: '#64748b',
}
/** Calls still under way, and statuses the provider may add. */
const OTHER_COLOR = '#3b82f6'

function statusColor(status: string): string {
  return STATUS_COLORS[status] ?? OTHER_COLOR
}

function section(title: string, body: string): string {
  return `<tr><td style="padding:18px 16px 4px 16px">
<h2 style="margin:0 0 10px 0;font-size:15px;line-height:20px;color:${INK};${FONT};font-weight:600">${e(title)}</h2>
${body}
</td></tr>`
}

function note(text: string): string {
  return `<p style="margin:0;font-size:13px;line-height:19px;color:${MUTED};${FONT};${WRAP}">${text}</p>`
}

/** Horizontal bars: label, bar (share of the largest), count and share of the total. */
function barList(items: CountItem[], total: number, color: (value: string) => string, label: (value: string) => string = (v) => v): string {
  if (items.length === 0) return note('None.')
  const max = Math.max(...items.map((i) => i.count), 1)
  const rows = items
    .map((i) => {
      const width = Math.max(1, Math.round((i.count / max) * 100))
      const share = total > 0 ? ` · ${rate(i.count, total)!.toFixed(1)}%` : ''
      return `<tr>
<td style="padding:3px 0;font-size:13px;line-height:17px;color:${INK};${FONT};${WRAP}">${l(label(i.value))}
<div style="margin-top:3px;background:#f3f4f6;border-radius:3px;height:10px;width:100%"><div style="background:${color(i.value)};border-radius:3px;height:10px;width:${width}%"></div></div></td>
<td style="padding:3px 0 3px 10px;font-size:13px;line-height:17px;color:${MUTED};${FONT};text-align:right;vertical-align:top;white-space:nowrap">${fmtInt(i.count)}${share}</td>
</tr>`
    })
    .join('\n')
  return `<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="border-collapse:collapse;width:100%;table-layout:auto">${rows}</table>`
}

function kpi(label: string, value: string, delta: string | undefined): string {
  const d = delta ? `<div style="font-size:12px;line-height:16px;color:${MUTED};${FONT}">${e(delta)} vs previous day</div>` : ''
  return `<td width="50%" style="width:50%;padding:6px;vertical-align:top">
<div style="border:1px solid ${LINE};border-radius:8px;padding:10px 12px">
<div style="font-size:12px;line-height:16px;color:${MUTED};${FONT};text-transform:uppercase;letter-spacing:0.04em">${e(label)}</div>
<div style="font-size:24px;line-height:30px;color:${INK};${FONT};font-weight:700">${e(value)}</div>
${d}</div></td>`
}

function kpis(report: DailyReport): string {
  const t = report.totals
  const c = report.change
  return `<tr><td style="padding:8px 10px 0 10px">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="border-collapse:collapse;width:100%">
<tr>${kpi('Calls', fmtInt(t.calls), fmtDelta(c.calls))}${kpi('Connect rate', fmtPct(t.connectRate), fmtDelta(c.connectRate, ' pts'))}</tr>
<tr>${kpi('Success rate', fmtPct(t.successRate), fmtDelta(c.successRate, ' pts'))}${kpi('Avg. duration', fmtDuration(t.avgDurationSeconds), undefined)}</tr>
</table></td></tr>`
}

/** Seven vertical bars (completed stacked under the rest), one column per day. */
function trendChart(report: DailyReport): string {
  const max = Math.max(...report.trend.map((d) => d.calls), 1)
  const HEIGHT = 90
  const bars = report.trend
    .map((d) => {
      const total = Math.round((d.calls / max) * HEIGHT)
      const done = d.calls ? Math.round((d.completed / d.calls) * total) : 0
      const rest = total - done
      const today = d.date === report.date
      return `<td style="vertical-align:bottom;text-align:center;padding:0 2px;width:14%">
<div style="font-size:11px;line-height:14px;color:${MUTED};${FONT}">${fmtInt(d.calls)}</div>
<div style="margin:0 auto;width:70%;max-width:40px;height:${rest}px;background:${today ? '#93c5fd' : '#cbd5e1'};border-radius:3px 3px 0 0"></div>
<div style="margin:0 auto;width:70%;max-width:40px;height:${done}px;background:${today ? '#2563eb' : '#64748b'}"></div>
</td>`
    })
    .join('')
  const labels = report.trend
    .map((d) => `<td style="text-align:center;padding:4px 2px 0 2px;font-size:11px;line-height:14px;color:${d.date === report.date ? INK : MUTED};${FONT};${d.date === report.date ? 'font-weight:700;' : ''}">${e(d.date.slice(5))}</td>`)
    .join('')
  // A whole percent of the day's own counts: the rate rounded to a tenth first made 5 of 11 (45.45 %) read 46 %.
  const rates = report.trend
    .map((d) => `<td style="text-align:center;padding:0 2px;font-size:10px;line-height:13px;color:${MUTED};${FONT}">${d.calls === 0 ? '—' : `${Math.round((d.completed * 100) / d.calls)}%`}</td>`)
    .join('')
  return `<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="border-collapse:collapse;width:100%;table-layout:fixed">
<tr style="height:${HEIGHT + 16}px">${bars}</tr><tr>${labels}</tr><tr>${rates}</tr></table>
${note('Calls per day; the darker part completed. Below each day: its success rate.')}`
}

function groupTable(title: string, what: string, groups: Array<{ name: string; figures: Figures }>, unit?: string): string {
  const { shown: rows, more } = shownGroups(groups, GROUPS_IN_MAIL)
  const th = (t: string, align = 'right') =>
    `<th style="padding:6px 4px;border-bottom:2px solid ${LINE};font-size:12px;line-height:15px;color:${MUTED};${FONT};font-weight:600;text-align:${align}">${t}</th>`
  const td = (t: string, align = 'right') =>
    `<td style="padding:6px 4px;border-bottom:1px solid ${LINE};font-size:13px;line-height:17px;color:${INK};${FONT};text-align:${align};vertical-align:top;${align === 'left' ? WRAP : 'white-space:nowrap'}">${t}</td>`
  const body = rows
    .map(({ name, figures: f }) => {
      const reason = f.failureReasons[0]
      const sub = reason ? `<div style="font-size:11px;line-height:15px;color:${MUTED}">top failure: ${l(reason.value)} (${fmtInt(reason.count)})</div>` : ''
      const statuses = f.byStatus
        .map((s) => `<span style="display:inline-block;width:${Math.max(1, (s.count / f.calls) * 100).toFixed(1)}%;height:6px;background:${statusColor(s.value)}"></span>`)
        .join('')
      const strip = `<div style="margin-top:4px;height:6px;width:100%;background:#f3f4f6;font-size:0;line-height:0;white-space:nowrap;overflow:hidden">${statuses}</div>`
      return `<tr>${td(`${l(name)}${sub}${strip}`, 'left')}${td(fmtInt(f.calls))}${td(fmtPct(f.connectRate))}${td(fmtPct(f.successRate))}${td(fmtDuration(f.avgDurationSeconds))}</tr>`
    })
    .join('\n')
  return section(
    title,
    `<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="border-collapse:collapse;width:100%">
<tr>${th('', 'left')}${th('Calls')}${th('Connect')}${th('Success')}${th('Avg.')}</tr>
${body}</table>${unit ? note(unit) : ''}${more.groups ? note(`and ${fmtInt(more.groups)} more ${what} with ${fmtInt(more.calls)} calls between them (each call is in the CSV)`) : ''}`,
  )
}

function legend(): string {
  return [...Object.entries(STATUS_COLORS), ['in progress / other', OTHER_COLOR] as const]
    .map(([s, c]) => `<span style="display:inline-block;margin:0 10px 4px 0;font-size:11px;line-height:14px;color:${MUTED};${FONT};white-space:nowrap"><span style="display:inline-block;width:8px;height:8px;border-radius:2px;background:${c};margin-right:4px"></span>${e(s)}</span>`)
    .join('')
}

function resultsSection(report: DailyReport): string {
  const blocks = report.totals.results.map((r) => {
    const other = r.otherValues ? note(`and ${fmtInt(r.otherValues)} more values (${fmtInt(r.otherCount)} conversations)`) : ''
    return `<h3 style="margin:10px 0 4px 0;font-size:13px;line-height:17px;color:${INK};${FONT};font-weight:600;${WRAP}">${l(r.key)} <span style="font-weight:400;color:${MUTED}">· reported by ${fmtInt(r.reported)}</span></h3>
${barList(r.values, r.reported, () => '#6366f1')}${other}`
  })
  // The keys past the most reported ones are not dropped without a word: the CSV has a column for each.
  const more = report.totals.resultKeysOther ? note(`and ${fmtInt(report.totals.resultKeysOther)} more results keys, not broken down here (each is a column of the attached CSV)`) : ''
  return section('Results', blocks.length ? blocks.join('\n') + more : note('No conversation reported results.'))
}

function followUpSection(report: DailyReport): string {
  const f = report.followUps
  const planned = f.scheduled + f.refused
  if (planned === 0) return section('Follow-ups', note('No follow-up calls were scheduled that day.'))
  const refused = f.refused ? `; ${fmtInt(f.refused)} more refused by the provider` : ''
  return section(
    'Follow-ups',
    `${note(`${fmtInt(f.scheduled)} follow-up call${f.scheduled === 1 ? '' : 's'} scheduled or placed (calls continuing an earlier conversation); ${fmtInt(f.completed)} completed so far${refused}.`)}
<div style="height:6px"></div>${barList(f.outcomes, planned, statusColor)}`,
  )
}

function batchSection(report: DailyReport): string {
  const b = report.batches
  if (!b.available) return section('Batches (provider)', note(`Batch metrics are unavailable: ${l(b.error)}. The rest of this report comes from switchboard's own records.`))
  // Never "none" when the search stopped short: the day's batches may be older than the ones searched.
  const cut = `Only the provider's newest ${fmtInt(SEARCHED_BATCHES)} batches were searched; older ones may belong to this day too.`
  if (b.batches.length === 0) return section('Batches (provider)', note(b.searchCut ? `No batch of that day was found. ${cut}` : 'No batch was created or scheduled that day.'))
  const rows = b.batches
    .map((x) => {
      const m = x.metrics
      const figures = m
        ? `${fmtInt(m.total_processed)} of ${fmtInt(x.totalRecipients)} recipients processed · success ${fmtPct(Math.round(m.success_rate * 10) / 10)} of recipients · completed ${fmtInt(m.completed_count)} · no answer ${fmtInt(m.no_answer_count)} · busy ${fmtInt(m.busy_count)} · failed ${fmtInt(m.failed_count)} · unreachable ${fmtInt(m.unreachable_count)} · socket failure ${fmtInt(m.socket_failure_count)} · pending retry ${fmtInt(m.pending_retry_count)} · avg ${fmtDuration(m.avg_duration_seconds)}`
        : `metrics unavailable: ${l(x.metricsError ?? 'unknown')}`
      return `<tr><td style="padding:6px 0;border-bottom:1px solid ${LINE};font-size:13px;line-height:18px;color:${INK};${FONT};${WRAP}">
<strong>${l(x.name)}</strong> <span style="color:${MUTED}">#${l(x.id)} · agent ${l(x.agentId)} · ${l(x.status)}</span>
<div style="color:${MUTED};font-size:12px;line-height:17px">${figures}</div></td></tr>`
    })
    .join('\n')
  const more = `${b.truncated ? note('More batches exist; only the first are shown.') : ''}${b.searchCut ? note(cut) : ''}`
  return section('Batches (provider)', `${note(`The provider's figures, ${BATCHES_PER_RECIPIENT}.`)}<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="border-collapse:collapse;width:100%">${rows}</table>${more}`)
}

function webhookSection(report: DailyReport): string {
  const w = report.webhooks
  const rejected = w.rejected === null ? null : Object.values(w.rejected).reduce((s, n) => s + n, 0)
  const reasons = w.rejected && rejected ? ` (${Object.entries(w.rejected).map(([k, v]) => `${l(k)} ${fmtInt(v)}`).join(', ')})` : ''
  const cell = (label: string, value: string, alert = false) =>
    `<td style="padding:6px;text-align:center;vertical-align:top;width:20%"><div style="font-size:18px;line-height:24px;font-weight:700;color:${alert ? '#dc2626' : INK};${FONT}">${value}</div><div style="font-size:11px;line-height:14px;color:${MUTED};${FONT}">${label}</div></td>`
  const unknown = w.source === 'inbox' ? note('Duplicates and rejections are counted by the webhook receiver, which did not report them; “—” means unknown, not zero.') : ''
  return section(
    'Webhook health',
    `<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="border-collapse:collapse;width:100%;table-layout:fixed"><tr>
${cell('received', fmtInt(w.received))}${cell('duplicates', w.duplicates === null ? '—' : fmtInt(w.duplicates))}${cell('rejected', rejected === null ? '—' : fmtInt(rejected), (rejected ?? 0) > 0)}${cell('dead', fmtInt(w.dead), w.dead > 0)}${cell('reconciled', fmtInt(w.reconciled))}
</tr></table>${reasons ? note(`Rejected${reasons}.`) : ''}${unknown}`,
  )
}

function shell(report: DailyReport, preheader: string, inner: string, attachment: AttachedCsv | undefined): string {
  const title = subjectFor(report.date, report.timezone)
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="color-scheme" content="light"><title>${e(title)}</title></head>
<body style="margin:0;padding:0;background:#f3f4f6;-webkit-text-size-adjust:100%">
<div style="display:none;max-height:0;overflow:hidden;opacity:0">${e(preheader)}</div>
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="border-collapse:collapse;width:100%;background:#f3f4f6">
<tr><td align="center" style="padding:12px 8px">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="border-collapse:collapse;width:100%;max-width:600px;background:#ffffff;border-radius:10px">
<tr><td style="padding:18px 16px 6px 16px;border-bottom:1px solid ${LINE}">
<div style="font-size:12px;line-height:16px;color:${MUTED};${FONT};text-transform:uppercase;letter-spacing:0.06em">switchboard daily report</div>
<h1 style="margin:2px 0 0 0;font-size:22px;line-height:28px;color:${INK};${FONT};font-weight:700">${e(report.date)}</h1>
<div style="font-size:13px;line-height:18px;color:${MUTED};${FONT};${WRAP}">${e(report.timezone)} · calls that ended that day</div>
</td></tr>
${inner}
<tr><td style="padding:16px;border-top:1px solid ${LINE}">${note(`${attachmentNote(attachment)} Connected = completed or socket_failure; success = completed. Rates are shares of all calls (attempts); the provider's batch figures, of recipients. Generated ${e(generatedAt(report))}.`)}</td></tr>
</table>
</td></tr></table>
</body></html>
`
}

/** The whole HTML document. */
export function renderHtml(report: DailyReport, attachment?: AttachedCsv): string {
  const t = report.totals
  if (t.calls === 0) {
    return shell(
      report,
      `No calls on ${report.date}.`,
      `<tr><td style="padding:22px 16px 6px 16px">
<p style="margin:0;font-size:16px;line-height:23px;color:${INK};${FONT}">No calls ended on ${e(report.date)} — a quiet day.</p>
</td></tr>
${section('Last 7 days', trendChart(report))}
${followUpSection(report)}
${batchSection(report)}
${webhookSection(report)}`, attachment)
  }
  const preheader = `${fmtCount(t.calls, 'calls')} · ${fmtPct(t.successRate)} success · ${fmtPct(t.connectRate)} connected`
  const agents = report.agents.map((a) => ({ name: `Agent ${a.agentId}`, figures: a.figures }))
  const campaigns = report.campaigns.map((c) => ({ name: c.campaign, figures: c.figures }))
  const failures = t.failureReasons.length
    ? barList(t.failureReasons, t.calls - t.completed, () => '#dc2626') + (t.failureReasonsOther ? note(`and ${fmtInt(t.failureReasonsOther)} more with other reasons`) : '')
    : note('No failure reasons were reported.')
  return shell(
    report,
    preheader,
    `${kpis(report)}
${section('Outcomes', barList(t.byStatus, t.calls, statusColor))}
${section('Last 7 days', trendChart(report))}
${groupTable('By agent', 'agents', agents)}
${groupTable('By campaign', 'campaigns', campaigns, `${CALLS_ARE_ATTEMPTS[0]!.toUpperCase()}${CALLS_ARE_ATTEMPTS.slice(1)}.`)}
<tr><td style="padding:2px 16px 0 16px">${legend()}</td></tr>
${section('Top failure reasons', failures)}
${resultsSection(report)}
${followUpSection(report)}
${batchSection(report)}
${webhookSection(report)}`, attachment)
}
