import type { H3 } from 'h3'
import { runProcessingTask } from '../coordination/processing-task.ts'
import { localDate, reportableDay } from '../reports/day-range.ts'
import type { Figures } from '../reports/figures.ts'
import { fmtPct } from '../reports/format.ts'
import { shownGroups } from '../reports/shown-groups.ts'
import type { TrendDay } from '../reports/trend.ts'
import type { Runtime } from '../runtime.ts'
import { campaignFiguresTask } from './campaign-figures.ts'
import { chart, dayNotUnderstood, table } from './components.ts'
import { html, type SafeHtml } from './html.ts'
import { page } from './layout.ts'

/**
 * The most campaigns (or agents) a day's table lists, busiest first; the rest are counted below it. A campaign is
 * whatever the calls were given: one per row of a batch (a customer id in its `campaign` column) made a page of
 * 100,000 rows.
 */
const GROUPS_ON_PAGE = 200

function funnel(label: string, what: string, column: string, groups: Array<{ name: string; figures: Figures }>): SafeHtml {
  const { shown: rows, more } = shownGroups(groups, GROUPS_ON_PAGE)
  return html`${funnelTable(label, column, rows)}${more.groups ? html`<p><em>… and ${more.groups.toLocaleString('en')} more ${what} with ${more.calls.toLocaleString('en')} calls between them, not shown (the daily report's CSV lists each call with its campaign).</em></p>` : ''}`
}

function funnelTable(label: string, column: string, rows: Array<{ name: string; figures: Figures }>): SafeHtml {
  return table(label, [column, 'Placed', 'Connected', 'Completed', 'Connect rate', 'Success rate', 'Outcomes'], rows.map(({ name, figures: f }) => [
    name, String(f.calls), String(f.connected), String(f.completed), fmtPct(f.connectRate), fmtPct(f.successRate),
    // Every outcome of a busy day is a long line: it wraps rather than pushing the table past the screen.
    html`<span class="cell-text">${f.byStatus.map((s) => `${s.value} ${s.count}`).join(' · ')}</span>`,
  ]), 'No calls that day.')
}

function trendChart(title: string, trend: TrendDay[]): SafeHtml {
  const x = trend.map((d) => Date.parse(`${d.date}T12:00:00Z`) / 1000)
  return chart(title, {
    x,
    days: true,
    series: [
      { label: 'calls', values: trend.map((d) => d.calls) },
      { label: 'connected', values: trend.map((d) => d.connected) },
      { label: 'completed', values: trend.map((d) => d.completed) },
    ],
  }, (v) => new Date(v * 1000).toISOString().slice(0, 10))
}

/**
 * `/ui/campaigns`: per agent and campaign the funnel and outcomes of a day, and the 7- and 30-day trend —
 * from the daily report's own code (src/ui/campaign-figures.ts), not a second query.
 */
export function registerCampaignsPage(app: H3, rt: Runtime): void {
  app.get('/ui/campaigns', async (event) => {
    const tz = rt.config.recipes.timezone
    // A day that is not one (2026-02-30, a typo) shows today's, as a missing one does — saying so under the day picker.
    const asked = reportableDay(event.url.searchParams.get('date'), tz)
    const date = asked ?? localDate(rt.clock.now(), tz)
    // Off the receiver's loop under `serve`: a busy day's rows take seconds to fold (src/ui/campaign-figures.ts).
    const figures = await runProcessingTask(rt, campaignFiguresTask, { date, timezone: tz })
    return page(event, {
      title: 'Campaigns',
      body: html`<form method="get" action="ui/campaigns" class="filters" aria-label="Pick a day">
<label>Day (${tz})<input type="date" name="date" value="${date}"></label><button type="submit">Show</button>
</form>
${asked ? '' : dayNotUnderstood(event.url.searchParams.get('date'), date, `today in ${tz}`)}
<h2>By campaign, ${date}</h2>
${funnel('Campaigns', 'campaigns', 'Campaign', figures.campaigns.map((c) => ({ name: c.campaign, figures: c.figures })))}
<h2>By agent, ${date}</h2>
${funnel('Agents', 'agents', 'Agent', figures.agents.map((a) => ({ name: `agent ${a.agentId}`, figures: a.figures })))}
<h2>Trend</h2>
${trendChart('Last 7 days', figures.week)}
${trendChart('Last 30 days', figures.month)}`,
    })
  })
}
