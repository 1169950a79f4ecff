import type { ReportRow } from './day-rows.ts'
import type { Figures } from './figures.ts'
import { createGroupedFigures } from './group-figures.ts'

export interface AgentFigures {
  agentId: number
  figures: Figures
}

/** Figures per agent id. */
export function createAgentBreakdown() {
  const grouped = createGroupedFigures<number>()
  return {
    add(row: ReportRow, results: Array<[string, string]>) {
      grouped.add(row.agent_id, row, results)
    },
    finish(): AgentFigures[] {
      return grouped.finish().map(({ key, figures }) => ({ agentId: key, figures }))
    },
  }
}
