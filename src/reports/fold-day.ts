import type { ReportRow } from './day-rows.ts'
import { createFiguresAccumulator, scalarResults } from './figures.ts'
import { createAgentBreakdown } from './per-agent.ts'
import { createCampaignBreakdown } from './per-campaign.ts'

/**
 * A day's rows folded into its figures: the day's totals, per agent and per campaign — the daily report's and the
 * dashboard's campaigns page's one computation. `each` sees every row with its scalar results and campaign.
 */
export function foldDay(rows: readonly ReportRow[], each?: (row: ReportRow, index: number, results: Array<[string, string]>, campaign: string) => void) {
  const totals = createFiguresAccumulator()
  const agents = createAgentBreakdown()
  const campaigns = createCampaignBreakdown()
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!
    const results = scalarResults(row.results)
    totals.add(row, results)
    agents.add(row, results)
    const campaign = campaigns.add(row, results)
    each?.(row, i, results, campaign)
  }
  return { totals: totals.finish(), agents: agents.finish(), campaigns: campaigns.finish() }
}
