import type { DailyReport } from './build-report.ts'
import { SEARCHED_BATCHES } from './batch-metrics.ts'
import { rate, type CountItem, type Figures } from './figures.ts'
import { fmtCount, fmtDelta, fmtInt, fmtPct, fmtDuration, subjectFor } from './format.ts'
import { attachmentNote, type AttachedCsv } from './csv-attachment.ts'
import { generatedAt } from './generated-at.ts'
import { BATCHES_PER_RECIPIENT, CALLS_ARE_ATTEMPTS } from './counting-units.ts'
import { GROUPS_IN_MAIL, shownGroups } from './shown-groups.ts'
import { displayWidth, padToWidth } from './display-width.ts'
import { textLabel as l } from './shown-label.ts'

/**
 * The plain-text part: the same figures as the HTML, for clients that show text only. Every string from the data goes
 * through `l` (textLabel): webhook data must not add lines to it, nor hide or reorder what follows.
 */

const BAR = 24
/** The widest label beside a bar, in columns (`displayWidth`), so bars line up. */
const BAR_LABEL = 28

function bars(items: CountItem[], total: number): string[] {
  const max = Math.max(...items.map((i) => i.count), 1)
  const labels = items.map((i) => l(i.value))
  const width = Math.min(BAR_LABEL, Math.max(...labels.map(displayWidth), 4))
  return items.map((i, k) => {
    const bar = '#'.repeat(Math.max(1, Math.round((i.count / max) * BAR))).padEnd(BAR)
    const share = total > 0 ? ` ${rate(i.count, total)!.toFixed(1).padStart(5)}%` : ''
    return `  ${padToWidth(labels[k]!, width)} ${bar} ${fmtInt(i.count).padStart(7)}${share}`
  })
}

function groupLines(what: string, groups: Array<{ name: string; figures: Figures }>): string[] {
  const { shown, more } = shownGroups(groups, GROUPS_IN_MAIL)
  const lines = shown.flatMap(({ name, figures: f }) => {
    const reason = f.failureReasons[0]
    return [
      `  ${l(name)}`,
      `    ${fmtCount(f.calls, 'calls')} · connect ${fmtPct(f.connectRate)} · success ${fmtPct(f.successRate)} · avg ${fmtDuration(f.avgDurationSeconds)}`,
      `    ${f.byStatus.map((s) => `${l(s.value)} ${fmtInt(s.count)}`).join(', ')}${reason ? ` · top failure: ${l(reason.value)} (${fmtInt(reason.count)})` : ''}`,
    ]
  })
  return more.groups ? [...lines, `  and ${fmtInt(more.groups)} more ${what} with ${fmtInt(more.calls)} calls between them (each call is in the CSV)`] : lines
}

export function renderText(report: DailyReport, attachment?: AttachedCsv): string {
  const t = report.totals
  const c = report.change
  const out: string[] = [subjectFor(report.date, report.timezone), '']
  const trend = [
    'Last 7 days (calls, success rate):',
    ...report.trend.map((d) => `  ${d.date}  ${fmtInt(d.calls).padStart(8)}  ${fmtPct(d.successRate).padStart(6)}${d.date === report.date ? '  ← this report' : ''}`),
  ]
  const f = report.followUps
  const planned = f.scheduled + f.refused
  const followUps =
    planned === 0
      ? ['Follow-ups: none scheduled.']
      : [`Follow-ups: ${fmtInt(f.scheduled)} scheduled or placed (calls continuing an earlier conversation), ${fmtInt(f.completed)} completed so far${f.refused ? `; ${fmtInt(f.refused)} more refused by the provider` : ''}.`, ...bars(f.outcomes, planned)]
  const b = report.batches
  const batches = !b.available
    ? [`Batches (provider): unavailable — ${l(b.error)}`]
    : b.batches.length === 0
      ? [b.searchCut ? `Batches (provider): none of that day found; only the provider's newest ${fmtInt(SEARCHED_BATCHES)} were searched, older ones may belong to it too.` : 'Batches (provider): none created or scheduled that day.']
      : [
          `Batches (provider; ${BATCHES_PER_RECIPIENT}):`,
          ...b.batches.map((x) =>
            x.metrics
              ? `  ${l(x.name)} (#${l(x.id)}, agent ${l(x.agentId)}, ${l(x.status)}): ${fmtInt(x.metrics.total_processed)}/${fmtInt(x.totalRecipients)} recipients processed, success ${fmtPct(Math.round(x.metrics.success_rate * 10) / 10)} of recipients, completed ${fmtInt(x.metrics.completed_count)}, no answer ${fmtInt(x.metrics.no_answer_count)}, busy ${fmtInt(x.metrics.busy_count)}, failed ${fmtInt(x.metrics.failed_count)}, unreachable ${fmtInt(x.metrics.unreachable_count)}, socket failure ${fmtInt(x.metrics.socket_failure_count)}, pending retry ${fmtInt(x.metrics.pending_retry_count)}`
              : `  ${l(x.name)} (#${l(x.id)}): metrics unavailable — ${l(x.metricsError ?? 'unknown')}`,
          ),
          ...(b.truncated ? ['  (more batches exist; only the first are shown)'] : []),
          ...(b.searchCut ? [`  (only the provider's newest ${fmtInt(SEARCHED_BATCHES)} batches were searched; older ones may belong to this day too)`] : []),
        ]
  const w = report.webhooks
  const rejected = w.rejected === null ? '—' : fmtInt(Object.values(w.rejected).reduce((s, n) => s + n, 0))
  const webhooks = [
    `Webhooks: received ${fmtInt(w.received)} · duplicates ${w.duplicates === null ? '—' : fmtInt(w.duplicates)} · rejected ${rejected} · dead ${fmtInt(w.dead)} · reconciled ${fmtInt(w.reconciled)}`,
    ...(w.rejected && Object.keys(w.rejected).length ? [`  rejected by reason: ${Object.entries(w.rejected).map(([k, v]) => `${l(k)} ${fmtInt(v)}`).join(', ')}`] : []),
    ...(w.source === 'inbox' ? ['  (— = not reported by the receiver: unknown, not zero)'] : []),
  ]

  if (t.calls === 0) {
    out.push(`No calls ended on ${report.date} — a quiet day.`, '', ...trend, '', ...followUps, '', ...batches, '', ...webhooks, '', `Generated ${generatedAt(report)}.`, '')
    return out.join('\n')
  }
  out.push(
    `Calls          ${fmtInt(t.calls)}  (${fmtDelta(c.calls)} vs previous day)`,
    `Connect rate   ${fmtPct(t.connectRate)}  (${fmtDelta(c.connectRate, ' pts')})`,
    `Success rate   ${fmtPct(t.successRate)}  (${fmtDelta(c.successRate, ' pts')})`,
    `Avg. duration  ${fmtDuration(t.avgDurationSeconds)}  (connected calls)`,
    '',
    'Outcomes:',
    ...bars(t.byStatus, t.calls),
    '',
    ...trend,
    '',
    'By agent:',
    ...groupLines('agents', report.agents.map((a) => ({ name: `Agent ${a.agentId}`, figures: a.figures }))),
    '',
    `By campaign (${CALLS_ARE_ATTEMPTS}):`,
    ...groupLines('campaigns', report.campaigns.map((x) => ({ name: x.campaign, figures: x.figures }))),
    '',
    'Top failure reasons:',
    ...(t.failureReasons.length ? bars(t.failureReasons, t.calls - t.completed) : ['  none reported']),
    ...(t.failureReasonsOther ? [`  and ${fmtInt(t.failureReasonsOther)} more with other reasons`] : []),
    '',
    'Results:',
    ...(t.results.length
      ? [
          ...t.results.flatMap((r) => [`  ${l(r.key)} (reported by ${fmtInt(r.reported)}):`, ...bars(r.values, r.reported).map((l) => `  ${l}`), ...(r.otherValues ? [`    and ${fmtInt(r.otherValues)} more values`] : [])]),
          ...(t.resultKeysOther ? [`  and ${fmtInt(t.resultKeysOther)} more results keys, not broken down here (each is a column of the attached CSV)`] : []),
        ]
      : ['  none reported']),
    '',
    ...followUps,
    '',
    ...batches,
    '',
    ...webhooks,
    '',
    'Connected = completed or socket_failure; success = completed; rates are shares of all calls (attempts), the provider\'s batch figures shares of recipients.',
    attachmentNote(attachment),
    `Generated ${generatedAt(report)}.`,
    '',
  )
  return out.join('\n')
}
