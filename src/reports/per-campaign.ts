import { campaignOf } from './campaign.ts'
import type { ReportRow } from './day-rows.ts'
import type { Figures } from './figures.ts'
import { createGroupedFigures } from './group-figures.ts'

export interface CampaignFigures {
  campaign: string
  figures: Figures
}

/** Figures per campaign (batch or recipe; see `campaignOf`). Returns each row's campaign for reuse. */
export function createCampaignBreakdown() {
  const grouped = createGroupedFigures<string>()
  return {
    add(row: ReportRow, results: Array<[string, string]>): string {
      const campaign = campaignOf(row)
      grouped.add(campaign, row, results)
      return campaign
    },
    finish(): CampaignFigures[] {
      return grouped.finish().map(({ key, figures }) => ({ campaign: key, figures }))
    },
  }
}
