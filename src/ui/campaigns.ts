import type { H3 } from 'h3'
import { localDate, dayRange, reportableDay } from '../reports/day-range.ts'
import { loadDayRows } from '../reports/day-rows.ts'
import { scalarResults, type Figures } from '../reports/figures.ts'
import { fmtPct } from '../reports/format.ts'
import { createAgentBreakdown } from '../reports/per-agent.ts'
import { createCampaignBreakdown } from '../reports/per-campaign.ts'
import { buildTrend, type TrendDay } from '../reports/trend.ts'
import type { Runtime } from '../runtime.ts'
import { chart, table } from './components.ts'
import { html, type SafeHtml } from './html.ts'
import { page } from './layout.ts'


function funnel(label: string, rows: Array<{ name: string; figures: Figures }>): SafeHtml {
  return table(label, ['', 'Placed', 'Connected', 'Completed', 'Connect rate', 'Success rate', 'Outcomes'], rows.map(({ name, figures: f }) => [
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
 * from the daily report's own code (day rows, the same accumulators, `buildTrend`), not a second query.
 */
export function registerCampaignsPage(app: H3, rt: Runtime): void {
  app.get('/ui/campaigns', async (event) => {
    const tz = rt.config.recipes.timezone
    // A day that is not one (2026-02-30, a typo) shows today's, as a missing one does.
    const date = reportableDay(event.url.searchParams.get('date'), tz) ?? localDate(rt.clock.now(), tz)
    const rows = await loadDayRows(rt, dayRange(date, tz))
    const agents = createAgentBreakdown()
    const campaigns = createCampaignBreakdown()
    for (const row of rows) {
      const results = scalarResults(row.results)
      agents.add(row, results)
      campaigns.add(row, results)
    }
    const [week, month] = await Promise.all([buildTrend(rt, date, tz, 7), buildTrend(rt, date, tz, 30)])
    return page(event, {
      title: 'Campaigns',
      body: html`<form method="get" action="/ui/campaigns" class="filters" aria-label="Pick a day">
<label>Day (${tz})<input type="date" name="date" value="${date}"></label><button type="submit">Show</button>
</form>
<h2>By campaign, ${date}</h2>
${funnel('Campaigns', campaigns.finish().map((c) => ({ name: c.campaign, figures: c.figures })))}
<h2>By agent, ${date}</h2>
${funnel('Agents', agents.finish().map((a) => ({ name: `agent ${a.agentId}`, figures: a.figures })))}
<h2>Trend</h2>
${trendChart('Last 7 days', week.trend)}
${trendChart('Last 30 days', month.trend)}`,
    })
  })
}
